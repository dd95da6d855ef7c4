"""Explicit instance coverage of reasoning traces (§5.1.2, App. E.2).

An instance ID counts as mentioned when it appears in the trace as a standalone number
between 1 and N. Standalone means not part of a longer token: a number glued to an ASCII
letter, digit or underscore (``x2``, ``200th``), or inside a decimal or thousands-separated
number (``3.5``, ``1,000``) does not count; one next to punctuation, spaces, a hyphen or
any non-ASCII character does, so a range "instances 1-40" mentions 1 and 40 (not 2–39),
and "Instance 1000:" mentions 1000. Each ID counts once per trace.

:data:`STANDALONE` is the rule as a regex; :func:`mentioned_ids` applies the same rule in
one vectorised pass over the trace's bytes (the tests check they agree), whatever N.

>>> sorted(mentioned_ids("Instance 1: place. Instances 3-5 … 1,000 x2 3.5 200th", 2000))
[1, 3, 5]

Exercised by ``pytest tests/test_coverage.py``; speed by ``benchmarks/coverage.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

#: The rule, as a regex (ASCII word characters): the specification of mentioned_ids.
STANDALONE = re.compile(r"(?<![\w.,])\d+(?!\w)(?![.,]\d)", re.ASCII)
#: Longer digit runs are no instance ID.
MAX_DIGITS = 7

#: The pattern name of per-ID rates pooled over all patterns (Fig. 5).
POOLED = "all patterns"

#: Coverage bins of Table 3: <25 %, <75 %, <100 %, =100 %.
BINS = ("<25%", "<75%", "<100%", "=100%")
#: Valid runs without a reasoning trace: their own row, so that Table 3 adds up to every valid run.
NO_TRACE = "no trace"


def mentioned_ids_regex(trace: str | None, n: int) -> set[int]:
    """:func:`mentioned_ids` by the regex: the slow, obvious reference."""
    values = {int(t) for t in STANDALONE.findall(trace or "") if len(t) <= MAX_DIGITS}
    return {v for v in values if 1 <= v <= n}


def mentioned_ids(trace: str | None, n: int) -> set[int]:
    """The instance IDs 1..n that ``trace`` mentions as standalone numbers."""
    if not trace:
        return set()
    # Non-ASCII characters become bytes >= 0x80: neither digits, word characters nor separators.
    b = np.frombuffer(trace.encode("utf-8", "replace"), dtype=np.uint8)
    digit = (b >= 48) & (b <= 57)
    if not digit.any():
        return set()
    word = digit | ((b >= 65) & (b <= 90)) | ((b >= 97) & (b <= 122)) | (b == 95)
    sep = (b == 46) | (b == 44)
    padded = np.concatenate(([False], digit, [False]))
    starts = np.flatnonzero(padded[1:-1] & ~padded[:-2])
    ends = np.flatnonzero(padded[1:-1] & ~padded[2:]) + 1  # exclusive
    ok = (ends - starts) <= MAX_DIGITS
    before = starts - 1
    has = before >= 0
    ok[has] &= ~(word[before[has]] | sep[before[has]])
    has = ends < len(b)
    ok[has] &= ~word[ends[has]]
    has = ends + 1 < len(b)
    ok[has] &= ~(sep[ends[has]] & digit[ends[has] + 1])
    starts, lengths = starts[ok], (ends - starts)[ok]
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


def with_coverage(frame: pd.DataFrame) -> pd.DataFrame:
    """Valid experiments that have a reasoning trace, with ``mentioned``, ``coverage`` and ``bin``."""
    traced = frame[frame["valid"] & frame["reasoning"].notna() & (frame["reasoning"] != "")].copy()
    ids = [mentioned_ids(t, int(n)) for t, n in zip(traced["reasoning"], traced["n"])]
    traced["mentioned"] = [len(x) for x in ids]
    traced["mentioned_ids"] = ids
    traced["coverage"] = traced["mentioned"] / traced["n"].astype(float)
    traced["bin"] = pd.Categorical([coverage_bin(c) for c in traced["coverage"]], BINS)
    return traced


def coverage_table(frame: pd.DataFrame, by: str | list[str] = "model", traced: pd.DataFrame | None = None) -> pd.DataFrame:
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
    ``pattern`` (Fig. 5 pools patterns; Fig. 21 splits them). ``traced``: :func:`with_coverage`
    of ``frame`` when the caller has it.
    """
    traced = with_coverage(frame[frame["n"] == n]) if traced is None else traced[traced["n"] == n]
    pooled = traced.assign(pattern=POOLED)  # Fig. 5: every pattern together
    columns = ["model", "pattern", "position", "rate", "experiments"]
    parts = []
    for (model, pattern), group in pd.concat([pooled, traced]).groupby(["model", "pattern"], sort=False):
        counts = np.zeros(n + 1)
        for ids in group["mentioned_ids"]:
            counts[list(ids)] += 1
        parts.append(pd.DataFrame({"model": model, "pattern": pattern, "position": np.arange(1, n + 1),
                                   "rate": counts[1:] / len(group), "experiments": len(group)}))
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
