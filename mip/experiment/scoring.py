"""Answer parsing and verdicts (§3.4, App. D.1).

The prompt (App. B) asks for "only a JSON object with the field "answer"" at the end of
the response. One rule reads every output, whatever the distance between its parts:

1. **JSON first.** Every JSON object in the output counts, wherever it starts: in prose,
   in a code fence, nested in another object. Of those with an ``answer`` field (any
   case), the one that *closes last* decides — so an answer object that holds another
   (``{"answer": "PER", "alt": {"answer": "LOC"}}``) decides by its own field, and a
   wrapper without one (``{"result": {"answer": "LOC"}}``) leaves it to the inner one.
   Its value decides even when it is no label: a last answer outside the labels is a
   parse failure, whatever earlier objects said.
2. **Lenient fallback**, only when no JSON object anywhere has an ``answer`` field: the
   last ``answer: value`` — key bare, quoted or single-quoted (``Final answer: PER``,
   ``{'answer': 'PER'}``, an unterminated ``{"answer": "PER"``) — whose value is
   double- or single-quoted, a whole number, or a bare phrase ended by ``}``, ``,``, a
   line end or the end of the text (a final period allowed).
   A valid JSON answer anywhere beats a lenient line anywhere, also a later one
   (``{"answer": "positive"}`` then ``Final answer: negative`` is positive; so is it
   when the later line is a broken ``{"answer": "negative"``): the JSON object is the
   form the prompt asks for; the lenient form only rescues an output that never gave it.
3. **Values.** One of the task's two labels, answer and label folded alike (case-insensitive;
   spaces and hyphens read as underscores in both; a trailing period ignored). ``-1`` (number or string) or ``tie`` (any
   case) is a parsed tie: valid and incorrect (footnote 4). Anything else: parse failure.

Parsing is linear in the output's length (:mod:`mip.experiment.jsonscan`); nothing depends on how far
apart answers are or how many braces precede them.

>>> parse_answer('Counting… {"answer": "PER"}', ("LOC", "PER"))
'PER'
>>> parse_answer('{"answer": "positive"}\\nFinal answer: negative', ("negative", "positive"))
'positive'
>>> parse_answer('Final answer: Tie', ("LOC", "PER"))
'-1'
>>> verdict_of(parse_answer('{"answer": -1}', ("LOC", "PER")), "LOC", finish_reason="stop")
(<Verdict.INCORRECT: 'incorrect'>, None)

Exercised by ``pytest tests/test_scoring.py tests/test_jsonscan.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from mip.config.task import label_key
from mip.experiment.jsonscan import Scan

TIE = "-1"

RULE_VERSION = 3
"""The answer rule's version: 1 looked for an object within 2,000 characters of the last 50
keys; 2 is the rule above, but compared the folded answer with each label as written (case
aside), so no answer was ever read as a label holding a space or a hyphen (``even number``:
a parse failure); 3 is the rule above, answer and label folded alike. Verdicts of two versions
must not be pooled in one table where they can differ (:func:`verdicts_as`)."""


def verdicts_as(rule: int | None, labels: Sequence[str]) -> int:
    """The oldest rule whose verdicts a record scored under ``rule`` (None: rule 1) has, for a
    task of these labels: rule 2's are rule 3's unless a label holds a space or a hyphen. A
    stored verdict is not scored again; this says which may differ from today's.

    >>> verdicts_as(2, ["even_number", "odd_number"]), verdicts_as(2, ["even number", "odd"]), verdicts_as(None, [])
    (3, 2, 1)
    """
    rule = rule or 1
    return 3 if rule == 2 and not any(" " in str(x) or "-" in str(x) for x in labels) else rule


class Verdict(StrEnum):
    """What an attempt, and so an experiment, came to (§3.4; the counted attempt is the first
    valid one, §3.2). A str enum: records, tables and W&B keep its value (``"correct"``), and
    a record whose verdict is none of these fails its schema (the store quarantines it)."""

    CORRECT = "correct"
    """Valid: the parsed label is the experiment's majority label y_maj (§3.4)."""
    INCORRECT = "incorrect"
    """Valid: the parsed label is the minority label, or the model answered a tie (``-1``),
    which the paper counts as valid but incorrect (§3.4, footnote 4)."""
    INVALID = "invalid"
    """Not valid: no label could be read; :class:`InvalidKind` says why (App. D.1). Left out
    of valid-only accuracy, counted as wrong in all-experiment accuracy (App. D.2)."""

    @property
    def valid(self) -> bool:
        """Whether the verdict counts in valid-only accuracy: correct and incorrect do."""
        return self is not Verdict.INVALID


#: The verdicts that count in valid-only accuracy (:attr:`Verdict.valid`): the one home of
#: "which verdicts are valid", read by the results frame and the W&B run summary.
VALID_VERDICTS: frozenset[str] = frozenset(v.value for v in Verdict if v.valid)

#: The paper's two accuracies as (numerator, denominator) counts of a set of experiments:
#: valid-only, correct among the valid ones (§3.4), and all-experiment, invalid counting as
#: wrong (App. D.1–D.2). Read by :data:`mip.analysis.stats.METRICS` and the W&B run summary.
ACCURACIES: dict[str, tuple[str, str]] = {"valid_only": ("correct", "valid"), "all": ("correct", "experiments")}


class InvalidKind(StrEnum):
    """Why an experiment is invalid: the three types of App. D.1."""

    INPUT_OVERFLOW = "input_overflow"
    """Invalid input: the prompt is longer than the model's context window, found before any
    call (no attempt is made)."""
    PARSE = "parse"
    """The response holds no answer the rule above reads as a label or a tie (a parsing issue)."""
    TRUNCATED = "truncated"
    """The response stopped at the output-token limit (finish reason ``length``), whatever it
    holds — unless the model has a reserved answer budget (App. C.2), whose forced answers
    are parsed like any other."""


#: The verdicts with an invalid one named by its kind, in table order: the columns of a
#: verdict table (:mod:`mip.summary`) and a job's tally.
OUTCOMES = (Verdict.CORRECT.value, Verdict.INCORRECT.value, *(kind.value for kind in InvalidKind))


def outcome(verdict: Verdict, invalid_kind: InvalidKind | None) -> str:
    """One of :data:`OUTCOMES`: the verdict, or the kind of an invalid one."""
    return str(invalid_kind or verdict)


# The lenient form: `answer` as a key (bare, quoted or single-quoted), then a value.
# Possessive quantifiers keep each try bounded, so the fallback is linear too.
_KEY = re.compile(r"""["']?\banswer\b["']?\s*+:""", re.IGNORECASE)
_LENIENT_VALUE = re.compile(r"""\s*+(?:"([^"\n]{0,100})"|'([^'\n]{0,100})'|(-?\d++)|"""
                            r"""([A-Za-z_][\w \t\r]{0,60}+)\.?[ \t\r]*+(?:[},\n]|\Z))""")
_TIE_WORDS = ("-1", "tie")
_MISSING = object()


def _normalise(value: object, labels: Sequence[str]) -> str | None:
    """A label, ``TIE``, or None for anything else (rule 3)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return TIE if value == -1 else None
    if not isinstance(value, str):
        return None
    v = value.strip().strip(".").strip()
    if v.casefold() in _TIE_WORDS:
        return TIE
    folded = label_key(v)  # the answer and each label folded alike
    for label in labels:
        if folded == label_key(label):
            return label
    return None


def _answer_field(obj: dict) -> object:
    """The value of the object's ``answer`` key (the last one, if it has several spellings)."""
    found = _MISSING
    for key, value in obj.items():
        if key.strip().casefold() == "answer":
            found = value
    return found


def _answer_object(scan: Scan) -> tuple[dict, object] | None:
    """The JSON object that closes last among those with an answer field, and that answer (rule 1)."""
    best_end, best = -1, None
    for end, value in scan.found.values():
        if end > best_end and isinstance(value, dict):
            answer = _answer_field(value)
            if answer is not _MISSING:
                best_end, best = end, (value, answer)
    return best


def _lenient_answer(text: str) -> object:
    """The last ``answer: value`` whose value has one of the lenient forms (rule 2), else ``_MISSING``."""
    for key in reversed(list(_KEY.finditer(text))):
        value = _LENIENT_VALUE.match(text, key.end())
        if value:
            return next(g for g in value.groups() if g is not None)
    return _MISSING


def _last_answer(output: str | None) -> object:
    """The raw answer value under rules 1 and 2, else ``_MISSING``."""
    if not output:
        return _MISSING
    text = output.replace("\x00", "")
    found = _answer_object(Scan(text))
    return found[1] if found else _lenient_answer(text)


def parse_answer(output: str | None, labels: Sequence[str]) -> str | None:
    """The parsed answer — one of ``labels`` or ``"-1"`` — or None when there is none (see the module docstring)."""
    value = _last_answer(output)
    return None if value is _MISSING else _normalise(value, labels)


def parse_counts(output: str | None, labels: Sequence[str]) -> dict[str, int] | None:
    """The per-label ``counts`` in the JSON object that decides the answer (count_report), or None."""
    if not output:
        return None
    found = _answer_object(Scan(output.replace("\x00", "")))
    reported = found[0].get("counts") if found else None
    if not isinstance(reported, dict):
        return None
    counts = {}
    for name, value in reported.items():
        label = _normalise(name, labels)
        if label in labels and isinstance(value, (int, float)) and not isinstance(value, bool):
            counts[label] = int(value)
    return counts if set(counts) == set(labels) else None


def parse_labels(output: str | None, labels: Sequence[str], ids: Sequence[int]) -> dict[int, str]:
    """Per-instance labels from the JSON list of ``{"id", "label"}`` objects that closes last (decomposed).

    Only the asked ``ids`` count; an id given twice with different labels, or with a label
    outside the two, is left out (it will be asked again).
    """
    if not output:
        return {}
    lists = [(end, items) for end, items in Scan(output.replace("\x00", "")).found.values()
             if isinstance(items, list) and any(isinstance(x, dict) for x in items)]
    if not lists:
        return {}
    wanted = set(ids)
    found: dict[int, str] = {}
    conflicted: set[int] = set()
    for item in max(lists, key=lambda pair: pair[0])[1]:
        if not isinstance(item, dict):
            continue
        try:
            index = int(item.get("id"))
        except (TypeError, ValueError, OverflowError):
            continue
        label = _normalise(item.get("label"), labels)
        if index not in wanted or label not in labels:
            continue
        if index in found and found[index] != label:
            conflicted.add(index)
        found.setdefault(index, label)
    return {i: label for i, label in found.items() if i not in conflicted}


def majority_of(predictions: Sequence[str | None], labels: Sequence[str]) -> str:
    """The majority of the predicted labels (missing ones ignored); ``-1`` for a tie."""
    first, second = labels
    a = sum(p == first for p in predictions)
    b = sum(p == second for p in predictions)
    return TIE if a == b else (first if a > b else second)


def answer_value(output: str | None) -> object | None:
    """The raw value of the answer the rule picks (None when there is none): for numeric answers (filtering)."""
    value = _last_answer(output)
    return None if value is _MISSING else value


def parse_number(value: object) -> float | None:
    """A numeric answer: ``1,200``, ``$51``, ``54.`` and ``-3`` read as numbers; anything else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip().replace(",", "").replace("$", "").replace(" ", "").rstrip(".")
    try:
        return float(text)
    except ValueError:
        return None


def verdict_of(
    answer: str | None,
    gold: str,
    finish_reason: str | None,
    forced_answer_ok: bool = False,
) -> tuple[Verdict, InvalidKind | None]:
    """``(verdict, invalid_kind)`` of one attempt.

    A length stop is ``truncated`` whatever the text holds, unless the model has a
    reserved answer budget (``forced_answer_ok``, App. C.2), whose forced answers are
    parsed like any other.
    """
    if finish_reason == "length" and not forced_answer_ok:
        return Verdict.INVALID, InvalidKind.TRUNCATED
    if answer is None:
        return Verdict.INVALID, InvalidKind.PARSE
    return (Verdict.CORRECT if answer == gold else Verdict.INCORRECT), None
