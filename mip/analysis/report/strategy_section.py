"""The strategies section (beyond the paper): each strategy slice's accuracy and Δ, its cost
beside the single call on the same slices, count errors, instance-level results and the
per-position error rates of the decomposed strategy. Every row and curve is one slice
(:data:`mip.analysis.slices.SLICE`): two budgets, (n, p) cells or pools never share a row.

>>> strategies(report, parts.strategies, baseline=slices.single_call_twins(frame, parts.strategies))  # doctest: +SKIP
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mip.analysis import pairs, slices  # noqa: E402
from mip.experiment.instances import PATTERNS  # noqa: E402
from mip.analysis.report import behind, sections  # noqa: E402
from mip.analysis.report.figures import Missing, later  # noqa: E402
from mip.analysis.report.cells import Links, grouped  # noqa: E402


#: The cost table's columns (each opens the slice's experiments in report.html).
COST_COLUMNS = ("experiments", "calls per experiment", "prompt tokens per experiment",
                "completion tokens per experiment", "cost per experiment (USD)", "total cost (USD)")
#: What a strategy's cost and count tables stand on (:func:`compared`).
MATCHED = "matched with the single call"


def slice_keys(frame: pd.DataFrame) -> list[str]:
    """The row label of a strategies table: the model (strategies as their own rows) and every
    other slice column whose value differs between rows, so that each row is one slice."""
    rest = [c for c in slices.SLICE if c not in ("model", "strategy")]
    return ["model", *[c for c in rest if frame[c].nunique(dropna=False) > 1]]


def strategy_tables(frame: pd.DataFrame) -> list[tuple[pd.DataFrame, str, str, Links]]:
    """Cost and tokens per experiment for every slice row; count errors and instance-level
    results where strategies recorded them; each row's numbers on its experiments of ``frame``."""
    out = []
    keys = slice_keys(frame)
    shared = [c for c in slices.SLICE if c not in keys and c != "strategy"]
    setting = ", ".join(f"{c}={frame[c].iloc[0]}" for c in shared if c in frame and len(frame))
    where = f" Rows: {', '.join(keys)}; shared by all rows: {setting}." if setting else f" Rows: {', '.join(keys)}."
    g = frame.groupby(keys, dropna=False)
    cost = pd.DataFrame({
        "experiments": g.size(), "calls per experiment": g["calls"].mean(),
        "prompt tokens per experiment": g["prompt_tokens"].mean(),
        "completion tokens per experiment": g["completion_tokens"].mean(),
        "cost per experiment (USD)": g["cost"].mean(), "total cost (USD)": g["cost"].sum(min_count=1),
    }).reset_index().round(6)
    out.append((cost, "cost_and_tokens", "What each slice (strategies as their own rows) costs per experiment: calls, "
                "prompt and completion tokens, and cost where the server reported it — the price of robustness."
                + where, grouped(cost, frame, keys, COST_COLUMNS, f"Cost and tokens ({MATCHED})")))
    counted = frame.dropna(subset=["count_error_majority"])
    if not counted.empty:
        c = counted.groupby([*keys, "pattern"], dropna=False)["count_error_majority"]
        table = pd.DataFrame({"experiments": c.size(), "mean error": c.mean(), "sd": c.std(ddof=1),
                              "mean |error|": c.apply(lambda e: e.abs().mean())}).reset_index().round(3)
        out.append((table, "count_errors", "Reported (count_report) or tallied (decomposed) majority-label count minus "
                    "the true count, per slice and pattern: negative means majority instances were dropped." + where,
                    grouped(table, counted, [*keys, "pattern"], ("experiments", "mean error", "sd", "mean |error|"),
                            f"Count errors ({MATCHED})")))
    decomposed = frame.dropna(subset=["instance_accuracy"])
    if not decomposed.empty:
        d = decomposed.groupby([*keys, "pattern"], dropna=False)
        table = pd.DataFrame({"experiments": d.size(), "instance accuracy": d["instance_accuracy"].mean(),
                              "missing share": d["missing_share"].mean()}).reset_index().round(4)
        columns = ("experiments", "instance accuracy", "missing share")
        out.append((table, "decomposed_instances", "Decomposed strategy: accuracy of the per-instance labels and "
                    "the share of instances left without a label, per slice and pattern." + where,
                    grouped(table, decomposed, [*keys, "pattern"], columns, f"Decomposed instances ({MATCHED})")))
    return out


def _binned(errors: list, bins: int) -> list[float]:
    values = np.array([np.nan if e is None else e for e in errors], dtype=float)
    edges = np.linspace(0, len(values), min(bins, len(values)) + 1).round().astype(int)
    return [float(values[a:b][~np.isnan(values[a:b])].mean()) if b > a and not np.isnan(values[a:b]).all() else np.nan
            for a, b in zip(edges[:-1], edges[1:])]


def position_errors(frame: pd.DataFrame, title: str, bins: int = 20) -> plt.Figure | Missing:
    """Decomposed strategy, one slice: the share of wrong instance labels by relative position,
    per pattern. A pattern whose experiments gave no instance label has no curve; with none at
    all the figure is not drawn, and the report says why."""
    curves = {}
    for pattern in [p for p in PATTERNS if p in set(frame["pattern"])]:
        rows = [_binned(e, bins) for e in frame[frame["pattern"] == pattern]["position_errors"] if len(e)]
        width = min((len(r) for r in rows), default=0)
        stack = np.array([r[:width] for r in rows], dtype=float)
        if width and not np.isnan(stack).all():
            with np.errstate(all="ignore"):
                counts = (~np.isnan(stack)).sum(axis=0)
                mean = np.where(counts > 0, np.nansum(stack, axis=0) / np.maximum(counts, 1), np.nan)
                curves[pattern] = (mean, len(rows))
    if not curves:
        return Missing(f"{title}: no experiment of this slice labelled any instance, so there is no error rate "
                       "to draw.")
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for pattern, (curve, count) in curves.items():
        ax.plot((np.arange(len(curve)) + 0.5) / len(curve) * 100, 100 * curve, marker="o", markersize=2,
                label=f"{pattern.replace('_', '-')} ({count} experiments)")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_xlabel("relative position in the prompt (%)")
    ax.set_ylabel("wrong instance labels (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def compared(frame: pd.DataFrame, baseline: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    """The experiments the cost and count tables compare: each strategy beside the single call on the
    experiments both hold (:func:`mip.analysis.pairs.matched`; ``frame`` itself without a baseline),
    and the note that says what was matched and dropped."""
    if baseline is None or baseline.empty:
        return frame, ""
    both = [pairs.matched(pd.concat([baseline, part]), "strategy", order=["single_call"])
            for _, part in frame.groupby("strategy")]
    kept = [m.frame for m in both if not m.empty]
    return (pd.concat(kept).drop_duplicates("key") if kept else frame), " " + " ".join(m.note() for m in both)


def strategies(report, frame: pd.DataFrame, baseline: pd.DataFrame | None = None) -> None:
    """Beyond the paper: each strategy slice's accuracy and Δ, cost, count errors. The cost
    table also shows the single call on the same slices (``baseline``): the price of robustness."""
    table = sections.model_rows(frame, slices.SLICE)
    report.table(table.round(4), "strategies", "Strategies other than the single call, one row per slice.",
                 behind.model_rows(table, frame, slices.SLICE, "strategies"))
    both, note = compared(frame, baseline)
    for table, name, how, links in strategy_tables(both):
        report.table(table, name, how + note, links)
    errors = frame.dropna(subset=["position_errors"])
    for setting, group in slices.of(errors, slices.SLICE):
        tag = slices.file_tag(setting, slices.SLICE)
        title = (f"Decomposed strategy: instance error rate by position, {slices.label(setting, slices.SLICE)}; "
                 f"{sections.holds(group)}")
        report.figure(later(position_errors)(group, title), f"position_error_rates_{tag}",
                      "Decomposed strategy: per-instance error rate against relative position, per pattern, "
                      "in one slice.")
