"""Answer parsing and verdicts (§3.4, App. D.1)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mip.scoring import _KEY, _MAX_KEYS, _keys, parse_answer, verdict_of

NER = ("LOC", "PER")
WSD = ("place", "programming_language")


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


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(['"answer"', "'Answer'", "ANSWER", "answers", "xanswer", "answer", '"', "'", ":", " ",
                                 "\n", "{", "}", "ſ", "é", "a", "1"]), max_size=80))
def test_answer_keys_are_found_as_the_pattern_finds_them(parts):
    text = "".join(parts)
    assert [m.span() for m in _keys(text)] == [m.span() for m in list(_KEY.finditer(text))[-_MAX_KEYS:]]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_parse_never_crashes_and_returns_a_label_or_none(text):
    assert parse_answer(text, NER) in (None, "-1", "LOC", "PER")


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
