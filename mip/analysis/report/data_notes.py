"""The report's notes beside its tables: what is absent from the data, the core setting the records
lack, what the providers said the calls cost, and how the records were restricted.

>>> where_text(None)
''
>>> spend_lines(pd.DataFrame({"base_model": ["a"], "cost": [None]}))
[]
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from mip.analysis import slices
from mip.experiment.instances import PATTERNS


def coverage_notes(frame: pd.DataFrame) -> list[str]:
    """What is absent from the data: patterns or seeds a model lacks that others have."""
    notes = []
    all_patterns = set(frame["pattern"])
    all_seeds = set(frame["seed"])
    for model, group in frame.groupby("model"):
        missing_p = sorted(all_patterns - set(group["pattern"]),
                           key=lambda p: PATTERNS.index(p) if p in PATTERNS else 99)
        missing_s = sorted(all_seeds - set(group["seed"]))
        if missing_p:
            notes.append(f"{model}: no experiments for pattern(s) {', '.join(missing_p)} — its Δ covers the "
                         "others only.")
        if missing_s:
            notes.append(f"{model}: no experiments for seed(s) {missing_s}.")
        for pattern, g in group.groupby("pattern"):
            if not g["valid"].any():
                notes.append(f"{model}: every experiment of pattern {pattern} is invalid; it has no valid-only "
                             "accuracy.")
    absent = [p for p in PATTERNS if p not in all_patterns]
    if absent:
        notes.append(f"Patterns absent from all records: {', '.join(absent)}.")
    return notes


def core_notes(frame: pd.DataFrame, parts: slices.Sections, core: tuple[int, float] | None) -> list[str]:
    """The note that no standard-prompt record is at the core (n, p), naming the (n, p) the records hold."""
    if parts.core_setting is None or not parts.core.empty:
        return []
    held = sorted({(int(n), float(p)) for n, p in frame[["n", "p"]].drop_duplicates().itertuples(index=False)})
    return [f"No standard-prompt record is at the core setting n = {core[0]}, p = {core[1]} (the records hold (n, p) = "
            f"{held[:10]}): pass core=[n,p] or core=null to analyse another as the core."]


def spend_lines(frame: pd.DataFrame) -> list[str]:
    """What the providers reported the records' calls cost (``usage.cost``, every attempt), per
    model; none where no record holds a reported cost.

    >>> spend_lines(pd.DataFrame({"base_model": ["a", "a", "b"], "cost": [0.5, 0.25, None]}))
    ['Spend the provider reported (usage.cost, every attempt): a $0.7500 (2 of 2 experiments).']
    """
    if "cost" not in frame or frame["cost"].isna().all():
        return []
    parts = [f"{model} ${g['cost'].sum():,.4f} ({int(g['cost'].notna().sum())} of {len(g)} experiments)"
             for model, g in frame.groupby("base_model", sort=True) if g["cost"].notna().any()]
    return [f"Spend the provider reported (usage.cost, every attempt): {'; '.join(parts)}."]


def where_text(where: slices.Where | None) -> str:
    if where is None:
        return ""
    return " ".join(f"where.{k}={v}" for k, v in dataclasses.asdict(where).items() if v is not None)
