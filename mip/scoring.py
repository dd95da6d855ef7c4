"""Answer parsing and verdicts (§3.4, App. D.1).

The answer is the last JSON object in the output that has an ``"answer"`` field; code
fences and text around it are ignored. ``-1`` (number or string) is a parsed tie: valid
and incorrect. A label outside the task's two is a parse failure.

>>> parse_answer('Counting… {"answer": "PER"}', ("LOC", "PER"))
'PER'
>>> verdict_of(parse_answer('{"answer": -1}', ("LOC", "PER")), "LOC", finish_reason="stop")
('incorrect', None)

Exercised by ``pytest tests/test_scoring.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

TIE = "-1"

CORRECT, INCORRECT, INVALID = "correct", "incorrect", "invalid"
INPUT_OVERFLOW, PARSE, TRUNCATED = "input_overflow", "parse", "truncated"

# `"answer"` as a JSON key, or the same key in single quotes or bare (lenient fallback).
_KEY = re.compile(r"""["']?\banswer\b["']?\s*:""", re.IGNORECASE)
_WORD = re.compile("answer", re.IGNORECASE)
_LENIENT_VALUE = re.compile(r"""\s*(?:"([^"\n]{0,100})"|'([^'\n]{0,100})'|(-?\d+)|([A-Za-z_][\w ]{0,60}?)\s*[},\n])""")
#: How far back from an ``"answer"`` key to look for the ``{`` that opens its object.
_OPEN_WINDOW = 2000
#: Keys examined, from the last, before giving up (bounds the work on adversarial text).
_MAX_KEYS = 50


class _Unparsed(str):
    """Marker for 'an answer field was found but its value is no label'."""


def _normalise(value: object, labels: Sequence[str]) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return TIE if value == -1 else None
    if not isinstance(value, str):
        return None
    v = value.strip().strip(".").strip()
    if v == TIE:
        return TIE
    folded = v.casefold().replace(" ", "_").replace("-", "_")
    for label in labels:
        if folded == label.casefold():
            return label
    return None


def _keys(text: str) -> list[re.Match]:
    """The last ``_MAX_KEYS`` matches of ``_KEY``, as ``_KEY.finditer`` finds them but found
    faster: the bare word is scanned for (a literal, several times faster than the pattern's
    optional leading quote lets the regex engine go) and the pattern checked where it is."""
    keys = []
    for word in _WORD.finditer(text):
        start = word.start()
        if start and text[start - 1] in "\"'":
            start -= 1
        key = _KEY.match(text, start)
        if key:
            keys.append(key)
    return keys[-_MAX_KEYS:]


def _objects_before(text: str, key: re.Match, decoder: json.JSONDecoder) -> Iterator[dict]:
    """The JSON objects that open at most ``_OPEN_WINDOW`` characters before ``key``, nearest first."""
    start = key.start()
    opening = text.rfind("{", max(0, start - _OPEN_WINDOW), start + 1)
    while opening != -1:
        try:
            obj, _ = decoder.raw_decode(text, opening)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            yield obj
        opening = text.rfind("{", max(0, start - _OPEN_WINDOW), opening)


def _last_answer(text: str) -> object:
    """The value of ``answer`` in the last JSON object of ``text`` that has one (a lenient
    ``answer: value`` where no object parses), else ``_MISSING``."""
    decoder = json.JSONDecoder()
    for key in reversed(_keys(text)):
        for obj in _objects_before(text, key, decoder):
            found = _find_answer(obj)
            if found is not _MISSING:
                return found
        lenient = _LENIENT_VALUE.match(text, key.end())
        if lenient:
            return next(g for g in lenient.groups() if g is not None)
    return _MISSING


_MISSING = object()


def _find_answer(obj: dict) -> object:
    for key, value in obj.items():
        if isinstance(key, str) and key.strip().casefold() == "answer":
            return value
    return _MISSING


def parse_answer(output: str | None, labels: Sequence[str]) -> str | None:
    """The parsed answer — one of ``labels`` or ``"-1"`` — or None when there is none.

    The last object that carries an ``answer`` decides: if its value is no label, the
    output is a parse failure even when an earlier object held a label.
    """
    if not output:
        return None
    value = _last_answer(output.replace("\x00", ""))
    return None if value is _MISSING else _normalise(value, labels)


def parse_counts(output: str | None, labels: Sequence[str]) -> dict[str, int] | None:
    """The per-label ``counts`` beside the last ``answer`` (count_report), or None."""
    if not output:
        return None
    decoder = json.JSONDecoder()
    text = output.replace("\x00", "")
    for key in reversed(_keys(text)):
        for obj in _objects_before(text, key, decoder):
            if isinstance(obj.get("counts"), dict):
                counts = {}
                for name, value in obj["counts"].items():
                    label = _normalise(name, labels)
                    if label in labels and isinstance(value, (int, float)) and not isinstance(value, bool):
                        counts[label] = int(value)
                return counts if set(counts) == set(labels) else None
    return None


def parse_labels(output: str | None, labels: Sequence[str], ids: Sequence[int]) -> dict[int, str]:
    """Per-instance labels from the last JSON list of ``{"id", "label"}`` objects (decomposed).

    Only the asked ``ids`` count; an id given twice with different labels, or with a label
    outside the two, is left out (it will be asked again).
    """
    if not output:
        return {}
    decoder = json.JSONDecoder()
    text = output.replace("\x00", "")
    wanted = set(ids)
    position = text.rfind("[")
    while position != -1:
        try:
            items, _ = decoder.raw_decode(text, position)
        except ValueError:
            items = None
        if isinstance(items, list) and any(isinstance(x, dict) for x in items):
            found: dict[int, str] = {}
            conflicted: set[int] = set()
            for item in items:
                if not isinstance(item, dict):
                    continue
                try:
                    index = int(item.get("id"))
                except (TypeError, ValueError):
                    continue
                label = _normalise(item.get("label"), labels)
                if index not in wanted or label not in labels:
                    continue
                if index in found and found[index] != label:
                    conflicted.add(index)
                found.setdefault(index, label)
            return {i: label for i, label in found.items() if i not in conflicted}
        position = text.rfind("[", 0, position)
    return {}


def majority_of(predictions: Sequence[str | None], labels: Sequence[str]) -> str:
    """The majority of the predicted labels (missing ones ignored); ``-1`` for a tie."""
    first, second = labels
    a = sum(p == first for p in predictions)
    b = sum(p == second for p in predictions)
    return TIE if a == b else (first if a > b else second)


def answer_value(output: str | None) -> object | None:
    """The raw value of the last ``answer`` object in ``output`` (None when there is none)."""
    if not output:
        return None
    value = _last_answer(output.replace("\x00", ""))
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
) -> tuple[str, str | None]:
    """``(verdict, invalid_kind)`` of one attempt.

    A length stop is ``truncated`` whatever the text holds, unless the model has a
    reserved answer budget (``forced_answer_ok``, App. C.2), whose forced answers are
    parsed like any other.
    """
    if finish_reason == "length" and not forced_answer_ok:
        return INVALID, TRUNCATED
    if answer is None:
        return INVALID, PARSE
    return (CORRECT if answer == gold else INCORRECT), None
