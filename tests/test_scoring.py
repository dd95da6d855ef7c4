"""Answer parsing and verdicts (§3.4, App. D.1)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mip.experiment import scoring
from mip.experiment.scoring import _normalise, parse_answer, parse_counts, parse_labels, verdict_of

NER = ("LOC", "PER")
WSD = ("place", "programming_language")
SENTIMENT = ("negative", "positive")


@pytest.mark.parametrize(
    "output,labels,expected",
    [
        ('{"answer": "PER"}', NER, "PER"),
        ('I counted 12 PER and 8 LOC.\n```json\n{"answer": "PER"}\n```', NER, "PER"),
        ('{"answer": "LOC"} then on reflection {"answer": "PER"}', NER, "PER"),  # the last object wins
        ('{"answer": -1}', NER, "-1"),
        ('{"answer": "-1"}', NER, "-1"),
        ('{"answer": "per"}', NER, "PER"),  # case-insensitive label match
        ('{"answer": "programming language"}', WSD, "programming_language"),
        ('{"answer": "ORG"}', NER, None),  # a label outside the two
        ('{"answer": "PER"} but finally {"answer": "maybe"}', NER, None),  # the last object decides
        ("The majority is PER.", NER, None),  # no JSON
        ('{"answer": null}', NER, None),
        ('{"answer": true}', NER, None),
        ('{"answer": 1}', NER, None),
        ('{"result": {"answer": "LOC"}}', NER, "LOC"),
        ("{'answer': 'LOC'}", NER, "LOC"),  # single quotes, leniently
        ('{"answer": "PER"', NER, "PER"),  # unterminated object, leniently
        ("", NER, None),
        (None, NER, None),
        ('{"answer": "PER"}\x00\x00', NER, "PER"),
        ('{"Answer": "LOC"}', NER, "LOC"),
        ('{"counts": {"LOC": 3, "PER": 5}, "answer": "PER"}', NER, "PER"),
    ],
)
def test_parse_answer(output, labels, expected):
    assert parse_answer(output, labels) == expected


def test_megabytes_of_text_are_a_verdict_not_a_crash():
    noise = ('{"x": [' * 1000) + "answer " * 200_000 + ("{" * 50_000)
    assert parse_answer(noise + '{"answer": "LOC"}', NER) == "LOC"
    assert parse_answer(noise, NER) is None


# Hard replies to the answer rule, each with the verdict a careful reader of the rule gives.

def test_a_lenient_answer_at_the_very_end_is_read_as_one_before_a_newline():
    assert parse_answer("I counted them all. answer: positive", SENTIMENT) == "positive"
    assert parse_answer("I counted them all. answer: positive\n", SENTIMENT) == "positive"
    assert parse_answer("Final answer: negative.", SENTIMENT) == "negative"


@pytest.mark.parametrize("distance", [100, 1_990, 2_500, 100_000])
def test_a_json_answer_beats_a_later_lenient_line_whatever_the_distance(distance):
    filler = ("I re-checked the instances. " * (distance // 28 + 1))[:distance]
    assert parse_answer('{"answer": "positive"}' + filler + "Final answer: negative", SENTIMENT) == "positive"


@pytest.mark.parametrize("distance", [100, 1_990, 2_500, 100_000])
def test_the_last_json_answer_wins_whatever_the_distance(distance):
    filler = "x" * distance
    assert parse_answer('{"answer": "positive"}' + filler + '{"answer": "negative"}', SENTIMENT) == "negative"
    assert parse_answer("{" * distance + '{"answer": "negative"}', SENTIMENT) == "negative"


BRACE_ATTACK = ("{" * 1999 + '"answer":') * 100  # 200 KB; took 1.96 s to parse


def test_the_brace_attack_is_a_parse_failure_and_an_answer_after_it_still_counts():
    assert parse_answer(BRACE_ATTACK, NER) is None  # no object parses, no key has a value
    assert parse_answer(BRACE_ATTACK + '{"answer": "LOC"}', NER) == "LOC"
    assert parse_answer(BRACE_ATTACK + ' "PER"}', NER) == "PER"  # the last key's value, leniently


@pytest.mark.parametrize(
    "output,expected",
    [
        ('{"answer": -1}', "-1"),
        ('{"answer": -1.0}', "-1"),
        ('{"answer": "-1"}', "-1"),
        ('{"answer": "tie"}', "-1"),
        ('{"answer": "Tie"}', "-1"),
        ('{"answer": "TIE."}', "-1"),
        ("answer: tie", "-1"),
        ("Final answer: -1\n", "-1"),
        ('{"answer": "tied"}', None),
        ('{"answer": "ORG"}', None),
        ('{"answer": "LOC or PER"}', None),
    ],
)
def test_a_tie_is_parsed_and_other_labels_are_not(output, expected):
    assert parse_answer(output, NER) == expected
    if expected == "-1":
        assert verdict_of(parse_answer(output, NER), "LOC", "stop") == ("incorrect", None)  # footnote 4


@pytest.mark.parametrize(
    "output,expected",
    [
        ('{"answer": "PER", "alternative": {"answer": "LOC"}}', "PER"),  # the object closing last decides
        ('{"answer": "PER", "ranked": [{"answer": "LOC"}]}', "PER"),
        ('{"reasoning": "I first wrote {\\"answer\\": \\"LOC\\"}", "answer": "PER"}', "PER"),  # escaped: no object
        ('{"Answer": "LOC", "answer": "PER"}', "PER"),  # the last spelling of the key
        ('{"answer": "LOC"}\nanswer: PER', "LOC"),  # JSON beats a later lenient line
        ('answer: LOC\n{"answer": "PER"', "PER"),  # no JSON answer: the last lenient one
        ("answer: PER\nThe answer: {\n", "PER"),  # a key without a readable value is skipped
        ('{"answer": "LOC"} {"answer": ', "LOC"),  # a broken object after a valid one
        ('{"answer": "LOC"}\nOn reflection: {"answer": "PER"', "LOC"),  # a broken one never overrides a valid one
    ],
)
def test_the_rule_on_mixed_outputs(output, expected):
    assert parse_answer(output, NER) == expected


def test_labels_with_spaces_in_a_fenced_block():
    assert parse_answer('```json\n{\n  "answer": "programming language"\n}\n```', WSD) == "programming_language"


# --- the rule, written the simplest way, as the parser must agree with ---------------------

_REFERENCE_KEY = re.compile(r"""["']?\banswer\b["']?\s*:""", re.IGNORECASE)
_REFERENCE_VALUE = re.compile(r"""\s*(?:"([^"\n]{0,100})"|'([^'\n]{0,100})'|(-?\d+)|"""
                              r"""([A-Za-z_][\w \t\r]{0,60}?)\.?[ \t\r]*(?:[},\n]|\Z))""")


def reference_answer(output: str | None, labels) -> str | None:
    """The module docstring's rule, quadratic and plain: raw_decode at every brace, the
    answer object that closes last; else the last key, at any position, with a value."""
    if not output:
        return None
    text = output.replace("\x00", "")
    decoder, last_end, value = json.JSONDecoder(), -1, MISSING
    for start in (i for i, c in enumerate(text) if c == "{"):
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        keys = [k for k in obj if k.strip().casefold() == "answer"]
        if keys and end > last_end:
            last_end, value = end, obj[keys[-1]]
    if value is MISSING:
        for start in reversed(range(len(text))):
            key = _REFERENCE_KEY.match(text, start)
            found = key and _REFERENCE_VALUE.match(text, key.end())
            if found:
                value = next(g for g in found.groups() if g is not None)
                break
    return None if value is MISSING else _normalise(value, labels)


MISSING = object()
ANSWERS = st.sampled_from(["LOC", "PER", "per", "-1", -1, "tie", "ORG", None, 1, True, ["PER"], "P E R"])
JSON_ANSWERS = st.one_of(
    st.builds(lambda a: json.dumps({"answer": a}), ANSWERS),
    st.builds(lambda a, k: json.dumps({k: a}, indent=2), ANSWERS, st.sampled_from(["Answer", " answer ", "ANSWER"])),
    st.builds(lambda a, b: json.dumps({"answer": a, "alt": {"answer": b}}), ANSWERS, ANSWERS),
    st.builds(lambda a: json.dumps({"result": {"answer": a}, "ids": [1, 2]}), ANSWERS),
    st.builds(lambda a: json.dumps({"counts": {"LOC": 3, "PER": 5}, "answer": a}), ANSWERS),
    st.builds(lambda a: json.dumps({"note": json.dumps({"answer": a})}), ANSWERS),  # an answer inside a string
    st.builds(lambda a: "```json\n" + json.dumps({"answer": a}) + "\n```", ANSWERS),
    st.builds(lambda a, cut: json.dumps({"answer": a})[:cut], ANSWERS, st.integers(1, 14)),  # cut short
)
LENIENT = st.builds(lambda prefix, value, end: f"{prefix}answer: {value}{end}",
                    st.sampled_from(["Final ", "The ", "'", '"', "", "x"]),
                    st.sampled_from(["LOC", "PER", '"PER"', "'LOC'", "-1", "tie", "programming language", "maybe PER", ""]),
                    st.sampled_from(["\n", "", ".", "}", ",", " because", ".\n", "  \n"]))
NOISE = st.sampled_from(["{", "}", "[", "]", '"', "'", ":", ",", "\\", "\n", " ", "```", "{{{{", '"answer":', "answer",
                         '{"a": {', '"}', "x" * 300])
FILLER = st.text(alphabet="abc PER LOC.\n", max_size=40)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(JSON_ANSWERS, LENIENT, NOISE, FILLER), max_size=10))
def test_the_parser_agrees_with_the_reference_rule(parts):
    text = "".join(parts)
    assert parse_answer(text, NER) == reference_answer(text, NER)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]":,\'\\ \nanswerAR-1PELOCtie`', max_size=300))
def test_the_parser_agrees_with_the_reference_on_character_soup(text):
    assert parse_answer(text, NER) == reference_answer(text, NER)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_parse_never_crashes_and_returns_a_label_or_none(text):
    assert parse_answer(text, NER) in (None, "-1", "LOC", "PER")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(JSON_ANSWERS, LENIENT, NOISE), min_size=1, max_size=8))
def test_adversarial_outputs_never_raise(parts):
    """A 30 KB repetition of a random mix, through every parser."""
    text = "".join(parts) * (30_000 // max(len("".join(parts)), 1) + 1)
    for parse in (lambda t: parse_answer(t, NER), lambda t: parse_counts(t, NER), lambda t: parse_labels(t, NER, [1, 2])):
        parse(text)


class Counted:
    """Wraps a compiled pattern, counting its match calls and the matches it yields (each
    reads a bounded stretch: the patterns' quantifiers are bounded or possessive)."""

    def __init__(self, pattern):
        self.pattern, self.calls = pattern, 0

    def match(self, text, pos=0):
        self.calls += 1
        return self.pattern.match(text, pos)

    def finditer(self, text):
        for found in self.pattern.finditer(text):
            self.calls += 1
            yield found


@pytest.mark.parametrize(
    "build",
    [
        lambda n: ("{" * 1999 + '"answer":') * (n // 2008 + 1),
        lambda n: '"answer": "' * (n // 11),
        lambda n: "answer: " + "a " * (n // 2),
        lambda n: "Answer: x\t" * (n // 10),
        lambda n: '{"answer": "x", "k": ' * (n // 21),
    ],
    ids=["brace attack", "unterminated quotes", "a long bare phrase", "many bare answers", "unbalanced answers"],
)
def test_the_lenient_fallback_is_linear_too(build, monkeypatch):
    """Pattern matches grow at most in step with the text (each match reads a bounded stretch)."""
    counts = []
    for n in (50_000, 100_000):
        key, value = Counted(scoring._KEY), Counted(scoring._LENIENT_VALUE)
        monkeypatch.setattr(scoring, "_KEY", key)
        monkeypatch.setattr(scoring, "_LENIENT_VALUE", value)
        parse_answer(build(n), NER)
        counts.append(key.calls + value.calls)
    assert counts[1] <= 2.5 * max(counts[0], 1) and counts[1] <= 100_000 // 4


@pytest.mark.parametrize(
    "answer,gold,finish,expected",
    [
        ("PER", "PER", "stop", ("correct", None)),
        ("LOC", "PER", "stop", ("incorrect", None)),
        ("-1", "PER", "stop", ("incorrect", None)),  # a parsed tie is valid and incorrect
        (None, "PER", "stop", ("invalid", "parse")),
        ("PER", "PER", "length", ("invalid", "truncated")),  # a length stop is truncated
        (None, "PER", "length", ("invalid", "truncated")),
    ],
)
def test_verdicts(answer, gold, finish, expected):
    assert verdict_of(answer, gold, finish) == expected


def test_forced_answer_after_reserved_budget_is_parsed():
    assert verdict_of("PER", "PER", "length", forced_answer_ok=True) == ("correct", None)


def test_a_verdict_is_an_enum_that_reads_and_writes_as_its_value():
    """Correct and incorrect are valid (a tie is incorrect, footnote 4); invalid is not, and
    carries a kind. Members are the strings records, tables and W&B have always held."""
    verdict, kind = verdict_of(None, "PER", "length")
    assert (verdict, kind) == (scoring.Verdict.INVALID, scoring.InvalidKind.TRUNCATED)
    assert isinstance(verdict, scoring.Verdict) and not verdict.valid
    assert [v for v in scoring.Verdict if v.valid] == ["correct", "incorrect"]
    assert f"{verdict} ({kind})" == "invalid (truncated)" and json.dumps([verdict, kind]) == '["invalid", "truncated"]'
    assert scoring.Verdict("incorrect") is scoring.Verdict.INCORRECT
    assert scoring.OUTCOMES == ("correct", "incorrect", "input_overflow", "parse", "truncated")
    assert scoring.outcome(verdict, kind) == "truncated" and type(scoring.outcome(verdict, kind)) is str
    assert scoring.outcome(scoring.Verdict.CORRECT, None) == "correct"


def test_labels_come_from_the_list_closing_last_and_counts_from_the_deciding_object():
    nested = '[{"id": 1, "label": "LOC"}, {"id": 2, "label": "PER", "notes": [{"x": 1}]}]'
    assert parse_labels(nested, NER, [1, 2]) == {1: "LOC", 2: "PER"}  # not the inner list, which closes first
    assert parse_labels('[{"id": 1, "label": "LOC"}] then [{"id": 1, "label": "PER"}]', NER, [1]) == {1: "PER"}
    counted = '{"counts": {"LOC": 1, "PER": 9}, "answer": "LOC"} revised: {"counts": {"LOC": 3, "PER": 5}, "answer": "PER"}'
    assert parse_counts(counted, NER) == {"LOC": 3, "PER": 5}
    assert parse_counts('{"counts": {"LOC": 3, "PER": 5}} {"answer": "PER"}', NER) is None  # not beside the answer


def test_deep_nesting_is_a_verdict_not_a_recursion_error():
    deep = "[" * 20_000 + '{"answer": "PER"}' + "]" * 20_000
    assert parse_answer(deep, NER) == "PER"
    assert parse_labels("[" * 20_000, NER, [1]) == {} and parse_counts("{" * 20_000, NER) is None
