r"""Where each instance and the answer label lie in a replayed sequence: character spans in
the prompt and the output, and the tokens that overlap each instance (App. F: an instance's
score sums over its tokens).

>>> prompt = "Classify.\nInstance 1: good\nInstance 2: bad"
>>> instance_spans(prompt, ["good", "bad"])
[(22, 26), (39, 42)]
>>> answer_span('{"answer": "positive"}', "positive")
(12, 20)

Exercised by ``pytest tests/test_attribution.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


class ReplaySkip(Exception):
    """A replay that cannot be attributed (no answer span, a tie, another label): counted, not fatal."""


def answer_span(output: str, label: str) -> tuple[int, int]:
    """Character span of ``label`` as the value of the last ``"answer"`` key in ``output``."""
    keys = list(re.finditer(r"""["']?answer["']?\s*:\s*["']?""", output, re.IGNORECASE))
    for match in reversed(keys):
        start = match.end()
        if output[start:start + len(label)] == label:
            return start, start + len(label)
    raise ReplaySkip("no answer span holding the selected label")


def instance_spans(prompt: str, texts: Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of each instance's text in ``prompt`` (its ``Instance i: text`` line)."""
    spans = []
    cursor = 0
    for i, text in enumerate(texts, start=1):
        marker = f"Instance {i}: "
        at = prompt.find(marker + text, cursor)
        if at < 0:
            raise ValueError(f"Instance {i} is not where the prompt should hold it.")
        start = at + len(marker)
        spans.append((start, start + len(text)))
        cursor = start + len(text)
    return spans


def tokens_per_instance(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Token indices of each instance: the tokens that overlap its text.

    A token that carries the space before a word (`` good``) overlaps the word and counts;
    instances are separated by ``\nInstance k: ``, so no token overlaps two of them, and
    instruction, template and response tokens overlap none.
    """
    out: list[list[int]] = [[] for _ in spans]
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    k = 0
    for index, (start, end) in enumerate(offsets):
        if end <= start:
            continue
        while k < len(order) and spans[order[k]][1] <= start:
            k += 1
        if k < len(order) and start < spans[order[k]][1] and end > spans[order[k]][0]:
            out[order[k]].append(index)
    return out
