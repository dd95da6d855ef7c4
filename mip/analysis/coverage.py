"""Explicit instance coverage of reasoning traces (§5.1.2, App. E.2).

The paper counts an instance ID as mentioned when it appears in the trace "as a standalone
number" between 1 and N, at least once. mip writes that rule out as follows.

1. A *numeral* is a maximal run of ASCII digits, where a single ``.`` or ``,`` between two
   digits joins the runs on either side: ``17``, ``3.5``, ``1,000``, ``1,2,3``.
2. A numeral glued to an ASCII letter or underscore on either side (``x2``, ``200th``,
   ``id_7``) is part of a word: no ID.
3. A numeral with a sign is a signed number, not an ID: ``-1`` (the tie answer), ``+3``,
   ``−2``. A ``-`` is a sign when nothing, a space or punctuation precedes it; after a digit
   or a letter it is a hyphen, so a range ``1-40`` mentions 1 and 40 (not 2–39).
4. A numeral with a ``.`` is a decimal (``3.5``, ``0.55``, ``1.2.3``): no ID. A ``.`` or
   ``,`` that does not sit between two digits is punctuation: ``positive.5`` and
   ``label,5`` mention 5, ``Instance 4.`` mentions 4.
5. A numeral of comma-joined groups is one thousands-grouped number when its first group
   has 1–3 digits and every later group exactly 3 (``1,000``, ``12,345``): no ID, as a
   count of that size is no instance ID of the paper's grids. Any other is a list, each
   group one number: ``1,2,3`` mentions 1, 2 and 3, ``12,40,7`` mentions 12, 40 and 7.
6. Everything else around a numeral (spaces, punctuation, brackets, non-ASCII text such as
   ``–`` or ``…``) leaves it standalone. Each ID counts once per trace; numbers of more
   than :data:`MAX_DIGITS` digits and outside 1..N do not count.

:func:`mentioned_ids_regex` states the rule with one regex and a few lines of Python;
:func:`mentioned_ids` applies it in one vectorised pass over the trace's bytes (the tests
check they agree on random text), whatever N.

>>> sorted(mentioned_ids("Instance 1: place. Instances 3-5 … 1,000 x2 3.5 200th -7 ids 8,9,11", 2000))
[1, 3, 5, 8, 9, 11]

Exercised by ``pytest tests/test_coverage.py``; speed by ``benchmarks/coverage.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from mip.experiment.instances import PATTERNS

#: Rule 1: a numeral, digit runs joined by single ``.`` or ``,`` (ASCII digits only).
NUMERAL = re.compile(r"\d+(?:[.,]\d+)*", re.ASCII)
#: Rule 5: a thousands-grouped number.
THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
#: Longer digit runs are no instance ID.
MAX_DIGITS = 7
_SIGNS = "+-\u2212"

#: The pattern name of per-ID rates pooled over all patterns (Fig. 5).
POOLED = "all patterns"

#: Coverage bins of Table 3: <25 %, <75 %, <100 %, =100 %.
BINS = ("<25%", "<75%", "<100%", "=100%")
#: Valid runs without a reasoning trace: their own row, so that Table 3 adds up to every valid run.
NO_TRACE = "no trace"


def _word(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


def mention_spans(trace: str | None, n: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """Where ``trace`` mentions IDs 1..n by the module's rule: each numeral that counts, as
    (start, end, its IDs) in the text; what the HTML report highlights in a trace."""
    trace, spans = trace or "", []
    for m in NUMERAL.finditer(trace):
        before = trace[m.start() - 1] if m.start() else " "
        after = trace[m.end()] if m.end() < len(trace) else " "
        if _word(before) or _word(after):  # rule 2
            continue
        if before in _SIGNS and not (m.start() > 1 and _word(trace[m.start() - 2])):  # rule 3
            continue
        text = m.group()
        if "." in text or THOUSANDS.fullmatch(text):  # rules 4 and 5
            continue
        ids = tuple(v for g in text.split(",") if len(g) <= MAX_DIGITS and 1 <= (v := int(g)) <= n)
        if ids:
            spans.append((m.start(), m.end(), ids))
    return spans


def mentioned_ids_regex(trace: str | None, n: int) -> set[int]:
    """:func:`mentioned_ids` by the regex and the rules as written: the slow, obvious reference."""
    return {v for _, _, ids in mention_spans(trace, n) for v in ids}


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and (exclusive) ends of the runs of True in ``mask``."""
    padded = np.concatenate(([False], mask, [False]))
    return np.flatnonzero(mask & ~padded[:-2]), np.flatnonzero(mask & ~padded[2:]) + 1


def mentioned_ids(trace: str | None, n: int) -> set[int]:
    """The instance IDs 1..n that ``trace`` mentions as standalone numbers (the module's rule)."""
    if not trace:
        return set()
    # Non-ASCII characters become bytes >= 0x80: neither digits, word characters nor joiners.
    b = np.frombuffer(trace.encode("utf-8", "replace"), dtype=np.uint8)
    digit = (b >= 48) & (b <= 57)
    if not digit.any():
        return set()
    size = len(b)
    word = digit | ((b >= 65) & (b <= 90)) | ((b >= 97) & (b <= 122)) | (b == 95)
    next_digit, prev_digit = np.append(digit[1:], False), np.insert(digit[:-1], 0, False)
    joiner = ((b == 46) | (b == 44)) & next_digit & prev_digit
    num_starts, num_ends = _runs(digit | joiner)  # rule 1: numerals
    starts, ends = _runs(digit)  # their digit groups
    which = np.searchsorted(num_starts, starts, side="right") - 1
    lengths = ends - starts
    # Rule 2: glued to a word character; rule 3: a sign not preceded by a word character.
    ok = np.ones(len(num_starts), dtype=bool)
    before, after = num_starts - 1, num_ends
    has = before >= 0
    ok[has] &= ~word[before[has]]
    sign = np.zeros(len(num_starts), dtype=bool)
    sign[has] = (b[before[has]] == 45) | (b[before[has]] == 43)
    minus = before >= 2  # U+2212 is E2 88 92 in UTF-8
    sign[minus] |= (b[before[minus]] == 0x92) & (b[before[minus] - 1] == 0x88) & (b[before[minus] - 2] == 0xE2)
    lead = np.where(b[np.maximum(before, 0)] == 0x92, before - 3, before - 1)
    glued = (lead >= 0) & word[np.maximum(lead, 0)]
    ok &= ~(sign & ~glued)
    has = after < size
    ok[has] &= ~word[after[has]]
    # Rule 4: a decimal; rule 5: a thousands-grouped number.
    dots = np.concatenate(([0], np.cumsum(joiner & (b == 46))))
    ok &= dots[num_ends] == dots[num_starts]
    first = starts == num_starts[which]
    groups = np.bincount(which, minlength=len(num_starts))
    odd = np.bincount(which, weights=(~first & (lengths != 3)) | (first & (lengths > 3)), minlength=len(num_starts))
    ok &= ~((groups > 1) & (odd == 0))
    keep = ok[which] & (lengths <= MAX_DIGITS)
    starts, lengths = starts[keep], lengths[keep]
    values = np.zeros(len(starts), dtype=np.int64)
    for k in range(MAX_DIGITS):
        more = lengths > k
        values[more] = values[more] * 10 + (b[starts[more] + k] - 48)
    values = values[(values >= 1) & (values <= n)]
    return set(np.unique(values).tolist())


def coverage(trace: str | None, n: int) -> float:
    """Share of the n IDs that the trace mentions."""
    return len(mentioned_ids(trace, n)) / n if n else 0.0


def coverage_bin(share: float) -> str:
    if share >= 1.0:
        return "=100%"
    if share >= 0.75:
        return "<100%"
    if share >= 0.25:
        return "<75%"
    return "<25%"


def has_trace(frame: pd.DataFrame) -> pd.Series:
    """Which experiments are valid and have a reasoning trace (those :func:`with_coverage` scans)."""
    return frame["valid"] & frame["reasoning"].notna() & (frame["reasoning"] != "")


def with_coverage(frame: pd.DataFrame) -> pd.DataFrame:
    """Valid experiments that have a reasoning trace, with ``mentioned``, ``coverage`` and ``bin``."""
    traced = frame[has_trace(frame)].copy()
    ids = [mentioned_ids(t, int(n)) for t, n in zip(traced["reasoning"], traced["n"])]
    traced["mentioned"] = [len(x) for x in ids]
    traced["mentioned_ids"] = ids
    traced["coverage"] = traced["mentioned"] / traced["n"].astype(float)
    traced["bin"] = pd.Categorical([coverage_bin(c) for c in traced["coverage"]], BINS)
    return traced


def coverage_table(frame: pd.DataFrame, by: str | list[str] = "model",
                   traced: pd.DataFrame | None = None) -> pd.DataFrame:
    """Table 3 (by model) / Table 7 (by model and budget): per group and coverage bin, the
    valid experiments, their share of the group's valid experiments and their accuracy.
    Valid experiments without a trace form the bin ``no trace``: the bins add up to every
    valid experiment, as the paper's do."""
    keys = [by] if isinstance(by, str) else list(by)
    columns = [*keys, "bin", "experiments", "share", "accuracy"]
    valid = frame[frame["valid"]]
    if valid.empty:
        return pd.DataFrame(columns=columns)
    traced = with_coverage(valid) if traced is None else traced
    bins = pd.Series(NO_TRACE, index=valid.index, dtype=object)
    bins[traced.index] = traced["bin"].astype(str)
    rows = valid[keys + ["correct"]].assign(bin=pd.Categorical(bins, [*BINS, NO_TRACE]))
    g = rows.groupby([*keys, "bin"], observed=False, dropna=False)
    out = pd.DataFrame({"experiments": g.size(), "accuracy": g["correct"].mean()}).reset_index()
    total = out.groupby(keys, dropna=False)["experiments"].transform("sum")
    out = out[total > 0]
    out["share"] = out["experiments"] / total[total > 0]
    return out[columns].reset_index(drop=True)


def mention_rates(frame: pd.DataFrame, n: int, traced: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per instance position 1..n, the share of traced valid experiments of size n mentioning it.

    Columns: ``position``, ``rate``, ``experiments``, and one row set per ``model`` and
    ``pattern`` (Fig. 5 pools patterns; Fig. 21 splits them), by model, then the pooled row set
    and the patterns in the paper's order: the same rows in the same order whatever order the
    records were read in (a store's, W&B's). ``traced``: :func:`with_coverage` of ``frame`` when
    the caller has it.
    """

    traced = with_coverage(frame[frame["n"] == n]) if traced is None else traced[traced["n"] == n]
    pooled = traced.assign(pattern=POOLED)  # Fig. 5: every pattern together
    columns = ["model", "pattern", "position", "rate", "experiments"]
    parts = []
    groups = sorted(pd.concat([pooled, traced]).groupby(["model", "pattern"], sort=False), key=lambda item: (
        str(item[0][0]), item[0][1] != POOLED, PATTERNS.index(item[0][1]) if item[0][1] in PATTERNS else len(PATTERNS),
        str(item[0][1])))
    for (model, pattern), group in groups:
        counts = np.zeros(n + 1)
        for ids in group["mentioned_ids"]:
            counts[list(ids)] += 1
        parts.append(pd.DataFrame({"model": model, "pattern": pattern, "position": np.arange(1, n + 1),
                                   "rate": counts[1:] / len(group), "experiments": len(group)}))
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
