"""Tables as Markdown, CSV and LaTeX, in the shapes of the paper's tables.

>>> pct(0.784, 0.031), pct(None), tied("random", "majority_first, random")
('78.4 ± 3.1', '–', 'random = majority_first')
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from mip.analysis import stats


#: How a missing value reads in a table (the README's promise).
MISSING = "–"


def pct(mean: float | None, sd: float | None = None, marker: str = "") -> str:
    """``78.4 ± 3.1`` in percent; ``–`` when undefined."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    text = f"{100 * mean:.1f}"
    if sd is not None and not (isinstance(sd, float) and math.isnan(sd)):
        text += f" ± {100 * sd:.1f}"
    return text + marker


def tied(chosen: str | None, ties: str | None, names: dict[str, str] | None = None) -> str:
    """π⁺ or π⁻ with the patterns tied with it: ``random = majority_first`` (mip.analysis.stats: the first
    in the paper's pattern order is chosen), by ``names`` where given (stats.SHORT); ``–`` when undefined."""
    if not isinstance(chosen, str) or not chosen:
        return MISSING
    others = [t for t in (ties if isinstance(ties, str) else "").split(", ") if t and t != chosen]
    return " = ".join((names or {}).get(p, p) for p in [chosen, *others])


def best_worst(best, worst, best_tied, worst_tied) -> str:
    """Table 2's ``π⁺ / π⁻`` cell by short names (stats.SHORT; the table's text gives the legend),
    every tie named, π⁻ ``–`` where no pattern is worse than π⁺.

    >>> best_worst("majority_first", "majority_last", "majority_first, majority_edges", "majority_last")
    'first = edges / last'
    >>> best_worst("random", "majority_first", "random, majority_first", "majority_first")
    'random = first / –'
    """
    ties = lambda t: [p for p in (t if isinstance(t, str) else "").split(", ") if p]  # noqa: E731
    shown_worst = worst if stats.worse(ties(best_tied) or [best], ties(worst_tied) or [worst]) else None
    return f"{tied(best, best_tied, stats.SHORT)} / {tied(shown_worst, worst_tied, stats.SHORT)}"


#: Columns that name patterns (π⁺, π⁻ and their ties): short names in report.md and LaTeX.
PATTERN_COLUMNS = ("best", "worst", "best_tied", "worst_tied")


def write_table(frame: pd.DataFrame, folder: Path, name: str) -> list[Path]:
    """``name.md``, ``name.csv`` and ``name.tex`` under ``folder``; a missing value reads ``–``
    in the Markdown and LaTeX tables (an empty field in the CSV)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.md", folder / f"{name}.csv", folder / f"{name}.tex"]
    shown = frame.astype(object).where(frame.notna(), MISSING)
    legend = ""
    named = [c for c in PATTERN_COLUMNS if c in shown.columns]
    if named:  # tied patterns by short names, so that a cell stays narrow; the CSV keeps the full names
        shown[named] = shown[named].map(lambda v: ", ".join(stats.SHORT.get(p, p) for p in v.split(", "))
                                        if isinstance(v, str) else v)
        legend = f"\nPatterns: {stats.legend()}.\n"
    paths[0].write_text(shown.to_markdown(index=False) + "\n" + legend, encoding="utf-8")
    frame.to_csv(paths[1], index=False)
    # Numbers as report.md writes them (1.86e-09, 0.5), not pandas' fixed six decimals (0.000000).
    paths[2].write_text(shown.to_latex(index=False, escape=True, float_format="{:g}".format), encoding="utf-8")
    return paths


def table2(models: pd.DataFrame) -> pd.DataFrame:
    """Table 2 / Table 6: each metric's accuracy and Δ (valid-only first, with π⁺ / π⁻, then
    all-experiment and any other of :data:`mip.analysis.stats.METRICS`) and the invalid rate per model."""
    extra = {c.capitalize(): models[c] for c in ("budget", "pool", "prompt_variant") if c in models}
    metrics: dict[str, list[str]] = {}
    for i, m in enumerate(stats.METRICS.values()):
        x = m.suffix
        metrics[f"Acc{x} (%)"] = [pct(a, s) for a, s in zip(models[f"acc{x}"], models[f"acc{x}_sd"])]
        metrics[f"Δ{x} (pp)"] = [pct(d, s, k) for d, s, k in zip(models[f"delta{x}"], models[f"delta{x}_sd"],
                                                                 models[f"delta{x}_marker"])]
        if i == 0:
            metrics["π⁺ / π⁻"] = [best_worst(b, w, bt, wt) for b, w, bt, wt in
                                  zip(models["best"], models["worst"], models["best_tied"], models["worst_tied"])]
    return pd.DataFrame({
        "Model": models["model"],
        **extra,
        **metrics,
        "Invalid (%)": [pct(m, s) for m, s in zip(models["invalid_rate"], models["invalid_rate_sd"])],
        "Experiments": models["experiments"],
        "Sets": models["sets"],
        "Rests on": models["rests on"] if "rests on" in models else None,
    })


def side_by_side_metrics() -> list[tuple[str, str | None, str]]:
    """The rows :func:`side_by_side` shows for each model: (column, its sd column, label)."""
    metrics = [(f"acc{m.suffix}", f"acc{m.suffix}_sd", m.label) for m in stats.METRICS.values()]
    metrics += [(f"delta{m.suffix}", f"delta{m.suffix}_sd", f"Δ π⁺ − π⁻ ({m.label})") for m in stats.METRICS.values()]
    return metrics + [("invalid_rate", "invalid_rate_sd", "invalid rate"), ("experiments", None, "experiments")]


def side_by_side(models: pd.DataFrame, column: str, order: list[str]) -> pd.DataFrame:
    """Conditions (budgets) side by side: one row per model and metric, a column per value of
    ``column`` in ``order``, then each one's change from the first (pp): 20K vs 100K in one table.

    The rows of ``models`` (:func:`mip.analysis.stats.model_table` by model and ``column``) must
    stand on matched experiments (:func:`mip.analysis.pairs.matched`) for a change to mean anything."""
    rows = []
    for model, group in models.groupby("model", sort=True):
        at = group.set_index(column)
        for value, sd, label in side_by_side_metrics():
            row = {"model": model, "metric": label}
            for c in order:
                x = at[value].get(c)
                row[c] = (str(int(x)) if pd.notna(x) else MISSING) if sd is None else pct(x, at[sd].get(c))
            for c in order[1:]:
                a, b = at[value].get(c), at[value].get(order[0])
                change = a - b if pd.notna(a) and pd.notna(b) else None
                shown = MISSING if change is None else f"{int(change):+d}" if sd is None else f"{100 * change:+.1f}"
                row[f"{c} − {order[0]}"] = shown
            rows.append(row)
    return pd.DataFrame(rows)
