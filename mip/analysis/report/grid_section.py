"""The generalisability section (§4.2): accuracy over the (n, p) grid per model and pattern
(Fig. 3, random with its sd over order seeds), pooled over patterns (Figs. 10, 11) and the mean
coverage per cell (Figs. 22, 23), per budget and pool, on the experiments every cell holds
(:func:`mip.analysis.slices.sections`). Each figure comes with the table of its numbers, each
number linked to the experiments of its cell (:mod:`mip.analysis.report.cells`).

>>> generalisability(report, parts.generalisability)   # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd

from mip.analysis import slices, stats
from mip.analysis.report import coverage_section, figures
from mip.analysis.report.behind import ACCURACY, numbers
from mip.analysis.report.cells import grouped
from mip.analysis.report.titles import holds
from mip.analysis.report.figures import later

CELL = ["n", "p"]


def cell_words(name: str) -> str:
    """The title of a cell's list: one for the cells table and for Fig. 3, so that both open one page."""
    return f"Generalisability, {name}, the matched experiments of cell"


def generalisability(report, frame: pd.DataFrame) -> None:
    """Fig. 3 (accuracy over n × p, random with its sd over order seeds), Figs. 10/11 and 22/23, per
    budget and pool; each a few parts of the report (:meth:`mip.analysis.report.Report.part`): the cells
    table with Fig. 3, then each model's Figs. 10 and 11, then the coverage grids (each model's its own)."""
    # What the grid matched and dropped: said beside the cells table, whose part alone reads it, so that a
    # model's parts are kept when another model's cells change.
    matched, frame = frame.attrs.get("matched", ""), frame.copy(deep=False)
    frame.attrs = {k: v for k, v in frame.attrs.items() if k != "matched"}
    for setting, group in slices.of(frame, ["budget", "pool"]):
        tag, name = slices.file_tag(setting, ["budget", "pool"]), slices.label(setting, ["budget", "pool"])
        report.part(f"{tag}: cells", [group, matched], lambda: cells_grids(report, group, tag, name, matched))
        for model, sub in group.groupby("model"):
            report.part(f"{tag}: {model}", sub, lambda: model_grids(report, model, sub, tag, name))
        coverage_section.coverage_grids(report, group, name, tag)


def cells_grids(report, group: pd.DataFrame, tag: str, name: str, matched: str = "") -> None:
    """The cells table of one budget and pool (``group``) and Fig. 3 per model and representative pattern."""
    cells = stats.accuracy(group, ["model", "pattern", *CELL])
    report.table(cells.round(4), f"generalisability_cells_{tag}",
                 f"Accuracy per (n, p) cell, model and pattern at {name} (§4.2); sd over selection seeds. "
                 + matched, grouped(cells, group, ["model", "pattern", *CELL], ACCURACY, cell_words(name)))
    pattern_grids(report, group, cells, tag, name)


def pattern_grids(report, group: pd.DataFrame, cells: pd.DataFrame, tag: str, name: str) -> None:
    """Fig. 3 per model and representative pattern: its accuracy per cell (``cells``)."""
    order_sd = stats.random_order_sd(group, ["model", *CELL])
    for (model, pattern), sub in cells.groupby(["model", "pattern"]):
        if pattern not in figures.REPRESENTATIVE:
            continue
        sd = None
        if pattern == "random":
            sd = order_sd[order_sd["model"] == model].pivot(index="p", columns="n", values="order_sd")
        rows = group[(group["model"] == model) & (group["pattern"] == pattern)]
        report.figure(later(figures.heatmap)(sub.pivot(index="p", columns="n", values="acc_mean"),
                                             f"Fig. 3: {model}, {pattern}, {name}: accuracy over n × p; {holds(rows)}",
                                             "accuracy (%)", counts=sub.pivot(index="p", columns="n", values="valid"),
                                             sd=sd),
                      f"fig3_np_{model}_{pattern}_{tag}", f"Fig. 3 for {model} under {pattern}; random shows ± sd "
                      "over order seeds (the paper's), the structured patterns none.",
                      numbers(sub, rows, ["model", "pattern", *CELL], ACCURACY, cell_words(name)))


def model_grids(report, model: str, sub: pd.DataFrame, tag: str, name: str) -> None:
    """Figs. 10 and 11 of one model: accuracy and invalid rate per cell, pooled over patterns."""
    acc = stats.accuracy(sub, CELL)
    inv = stats.invalid_rates(sub, CELL)
    report.figure(later(figures.heatmap)(acc.pivot(index="p", columns="n", values="acc_mean"),
                                         f"{model}, {name}: accuracy over n × p, all patterns (Fig. 10); {holds(sub)}",
                                         "accuracy (%)", counts=acc.pivot(index="p", columns="n", values="valid")),
                  f"fig10_np_accuracy_{model}_{tag}", "Valid-only accuracy pooled over patterns (Fig. 10).",
                  numbers(acc, sub, CELL, ACCURACY, f"{model}, {name}, all patterns, cell"))
    report.figure(later(figures.heatmap)(inv.pivot(index="p", columns="n", values="invalid_rate"),
                                         f"{model}, {name}: invalid rate over n × p (Fig. 11); {holds(sub)}",
                                         "invalid (%)",
                                         counts=inv.pivot(index="p", columns="n", values="experiments"), cmap="Reds"),
                  f"fig11_np_invalid_{model}_{tag}", "Invalid rate pooled over patterns (Fig. 11).",
                  numbers(inv, sub, CELL, [c for c in inv.columns if c not in CELL],
                          f"{model}, {name}, all patterns, cell"))
