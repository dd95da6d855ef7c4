"""The headline table analyze.py prints: per slice (:data:`mip.analysis.slices.SLICE`), valid-only
accuracy per pattern, Δ with its 95 % bootstrap interval, π⁺ and π⁻, and the instance sets
behind them. Every number comes from :mod:`mip.analysis.stats` and :mod:`mip.analysis.inference`, as in the
report; no two slices are pooled.

    python analyze.py 'results=[results/sweeps/2026-12-01/10-00-00]'

>>> print(render(headline(frame)))       # doctest: +SKIP

Exercised by ``pytest tests/test_readback.py``.
"""

from __future__ import annotations

import math

import pandas as pd

from mip.analysis import inference, slices, stats

#: The columns after the patterns' accuracies.
GAP = ["Δ (pp)", "Δ 95 % CI", "π⁺", "π⁻", "sets"]


def headline(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per slice: its :data:`~mip.analysis.slices.SLICE` columns, accuracy (%) per pattern in
    the paper's order, then :data:`GAP`."""
    if frame.empty:
        return pd.DataFrame(columns=[*slices.SLICE, *GAP])
    models = stats.model_table(frame, slices.SLICE).set_index(slices.SLICE)
    accuracy = stats.pattern_table(frame, slices.SLICE).pivot_table(
        index=slices.SLICE, columns="pattern", values="acc_mean", observed=True, dropna=False)
    rows = []
    for row, sub in slices.of(frame, slices.SLICE):
        key = tuple(row[k] for k in slices.SLICE)
        model = models.loc[key]
        best, worst = (model[k] if pd.notna(model[k]) else None for k in ("best", "worst"))
        low = high = math.nan
        if best and worst and best != worst:
            low, high = inference.bootstrap_gap(sub, best, worst)
        rows.append({**row, **(100 * accuracy.loc[key]).round(1).to_dict(),
                     "Δ (pp)": _pp(model["delta"]) + (model["delta_marker"] or ""),
                     "Δ 95 % CI": f"[{_pp(low)}, {_pp(high)}]" if not math.isnan(low) else
                     "not testable" if best and worst else "–",
                     "π⁺": best or "–", "π⁻": worst or "–", "sets": int(model["sets"])})
    return pd.DataFrame(rows)


def _pp(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{100 * value:.1f}"


def render(table: pd.DataFrame) -> str:
    """The headline as text: one block per setting (a slice less its model), one row per model."""
    if table.empty:
        return "Headline: no records."
    lines = ["Headline: valid-only accuracy (%) per pattern, mean over selection seeds; Δ = Acc(π⁺) − Acc(π⁻) "
             f"with its 95 % cluster-bootstrap interval over instance sets (needs {inference.MIN_PAIRS} pairs); "
             "sets: instance sets with a valid experiment."]
    for setting, block in slices.of(table, slices.SETTING):
        shown = block.drop(columns=slices.SETTING).dropna(axis=1, how="all").set_index("model")
        shown = shown.map(lambda v: "–" if isinstance(v, float) and math.isnan(v) else v)
        lines += [f"== {slices.label(setting)}", shown.to_string(), ""]
    return "\n".join(lines).rstrip()
