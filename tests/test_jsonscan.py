"""The JSON scanner: raw_decode's verdict at every opening, in linear work (mip.experiment.jsonscan)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mip.experiment import jsonscan
from mip.experiment.jsonscan import Scan


def raw_decode_everywhere(text: str) -> dict[int, tuple[int, object]]:
    """The quadratic definition: raw_decode tried at every ``{`` and ``[``."""
    decoder, found = json.JSONDecoder(), {}
    for start, char in enumerate(text):
        if char in "{[":
            try:
                value, end = decoder.raw_decode(text, start)
            except (ValueError, RecursionError):
                continue
            found[start] = (end, value)
    return found


def same(a: dict, b: dict) -> bool:
    # repr: NaN != NaN, and dict order does not matter for the rule but does for repr, so sort
    return sorted((k, e, repr(v)) for k, (e, v) in a.items()) == sorted((k, e, repr(v)) for k, (e, v) in b.items())


FRAGMENTS = ['{', '}', '[', ']', '"', "'", ':', ',', ' ', '\n', '\\', '\\"', '"a"', '"answer"', '1', '-1', '0', '1e5', '.5',
             'null', 'true', 'NaN', '-Infinity', 'x', '{"a": 1}', '[1, 2]', '{}', '[]', '"\t"', '["\t"]', '{"k": "\n"}',
             '\\u00e9', '"\\u12"', '["\\u00e9"]', '["\\u12"]']  # control characters and escapes, strict as json


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60))
def test_agrees_with_raw_decode_at_every_opening(parts):
    text = "".join(parts)
    assert same(Scan(text).found, raw_decode_everywhere(text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(json_values.map(json.dumps), json_values.map(lambda v: json.dumps(v, indent=1)),
                          st.sampled_from(FRAGMENTS), st.text(max_size=10)), max_size=12))
def test_agrees_with_raw_decode_on_json_among_prose(parts):
    text = " ".join(parts)
    assert same(Scan(text).found, raw_decode_everywhere(text))


def test_deep_nesting_is_parsed_without_recursion():
    depth = 50_000  # raw_decode raises RecursionError long before this
    scan = Scan('{"x": ' * depth + '{"answer": "PER"}' + "}" * depth)
    assert scan.found[0][0] == len('{"x": ' * depth + '{"answer": "PER"}' + "}" * depth)
    assert len(scan.found) == depth + 1


# Text that made trying raw_decode at every brace slow: unbalanced nesting fails only at the end.
PATHOLOGICAL = {
    "1,999 braces then a key": lambda n: ("{" * 1999 + '"answer":') * (n // 2008 + 1),
    "unbalanced objects": lambda n: '{"a": ' * (n // 6),
    "unbalanced answers": lambda n: '{"answer": "x", "k": ' * (n // 21),
    "unbalanced arrays": lambda n: "[" * n,
    "arrays of objects": lambda n: '[{"a": [' * (n // 8),
    "strings and braces in step": lambda n: '{":":"{",' * (n // 9),
    "strings opened, never closed": lambda n: '{"a": "' * (n // 7),
    "escaped quotes": lambda n: '{"' + '\\"' * (n // 2),
    "closed objects": lambda n: '{"answer": "PER"} ' * (n // 18),
    "balanced nesting": lambda n: '{"a": [' * (n // 14) + "1" + "]}" * (n // 14),
}


class CountingScanstring:
    """scanstring as the scanner calls it, counting the characters each call can have read."""

    def __init__(self):
        self.calls = self.chars = 0

    def __call__(self, text, end, strict=True):
        self.calls += 1
        try:
            value, stop = json.decoder.scanstring(text, end, strict)
        except ValueError:
            self.chars += len(text) - end  # at most: it may have read to the end
            raise
        self.chars += stop - end
        return value, stop


def work(text: str, monkeypatch) -> tuple[int, int]:
    counter = CountingScanstring()
    monkeypatch.setattr(jsonscan, "scanstring", counter)
    scan = Scan(text)
    return scan.work, counter.chars + counter.calls


@pytest.mark.parametrize("build", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_work_is_linear_in_the_length(build, monkeypatch):
    small, large = build(50_000), build(100_000)
    (work_small, strings_small), (work_large, strings_large) = work(small, monkeypatch), work(large, monkeypatch)
    assert work_large <= 3 * len(large) and strings_large <= 3 * len(large)
    assert work_large <= 2.5 * max(work_small, 1) and strings_large <= 2.5 * max(strings_small, 1)


def test_the_200_kb_brace_attack_costs_a_few_operations_per_character(monkeypatch):
    text = PATHOLOGICAL["1,999 braces then a key"](200_000)
    total, strings = work(text, monkeypatch)
    assert len(text) >= 200_000 and total <= 2 * len(text) and strings <= 2 * len(text)
