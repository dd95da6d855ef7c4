"""Explicit instance coverage of reasoning traces (§5.1.2, App. E.2).

An instance ID counts as mentioned when it appears in the trace as a standalone number
between 1 and N. Standalone means not part of a longer token: a number glued to a
letter (``x2``, ``200th``), or inside a decimal or thousands-separated number (``3.5``,
``1,000``) does not count; one next to punctuation, spaces or a hyphen does, so a range
"instances 1-40" mentions 1 and 40 (not 2–39), and "Instance 1000:" mentions 1000.
Each ID counts once per trace. Extraction is one regex pass over the trace, whatever N.

>>> sorted(mentioned_ids("Instance 1: place. Instances 3-5 … 1,000 x2 3.5 200th", 2000))
[1, 3, 5]

Exercised by ``pytest tests/test_coverage.py``; speed by ``benchmarks/coverage.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

_STANDALONE = re.compile(r"(?<![\w.,])(?<!\d[.,])\d+(?![\w])(?![.,]\d)")

#: Coverage bins of Table 3: <25 %, <75 %, <100 %, =100 %.
BINS = ("<25%", "<75%", "<100%", "=100%")


def mentioned_ids(trace: str | None, n: int) -> set[int]:
    """The instance IDs 1..n that ``trace`` mentions as standalone numbers."""
    if not trace:
        return set()
    found = set()
    for token in _STANDALONE.findall(trace):
        if len(token) <= 7:  # longer digit runs are no instance ID
            value = int(token)
            if 1 <= value <= n:
                found.add(value)
    return found


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
    traced = frame[frame["valid"] & frame["reasoning"].notna() & (frame["reasoning"].astype(str) != "")].copy()
    ids = [mentioned_ids(t, int(n)) for t, n in zip(traced["reasoning"], traced["n"])]
    traced["mentioned"] = [len(x) for x in ids]
    traced["mentioned_ids"] = ids
    traced["coverage"] = traced["mentioned"] / traced["n"].astype(float)
    traced["bin"] = pd.Categorical([coverage_bin(c) for c in traced["coverage"]], BINS)
    return traced


def coverage_table(frame: pd.DataFrame, by: str = "model") -> pd.DataFrame:
    """Table 3: per group and coverage bin, the valid experiments and their accuracy."""
    traced = with_coverage(frame)
    if traced.empty:
        return pd.DataFrame(columns=[by, "bin", "experiments", "share", "accuracy"])
    g = traced.groupby([by, "bin"], observed=False)
    out = pd.DataFrame({"experiments": g.size(), "accuracy": g["correct"].mean()}).reset_index()
    out["share"] = out["experiments"] / out.groupby(by)["experiments"].transform("sum")
    return out[[by, "bin", "experiments", "share", "accuracy"]]


def mention_rates(frame: pd.DataFrame, n: int) -> pd.DataFrame:
    """Per instance position 1..n, the share of traced valid experiments of size n mentioning it.

    Columns: ``position``, ``rate``, ``experiments``, and one row set per ``model`` and
    ``pattern`` (Fig. 5 pools patterns; Fig. 21 splits them).
    """
    traced = with_coverage(frame[frame["n"] == n])
    rows = []
    for (model, pattern), group in traced.groupby(["model", "pattern"]):
        counts = np.zeros(n + 1)
        for ids in group["mentioned_ids"]:
            counts[list(ids)] += 1
        for position in range(1, n + 1):
            rows.append({"model": model, "pattern": pattern, "position": position,
                         "rate": counts[position] / len(group), "experiments": len(group)})
    return pd.DataFrame(rows, columns=["model", "pattern", "position", "rate", "experiments"])
