"""The core section's coverage (Table 3, Figs. 5 and 21) and the generalisability grid's (Figs. 22, 23):
which instance IDs the reasoning traces mention (:mod:`mip.analysis.coverage`), per slice, and
pooled over the report's trace pool (:mod:`mip.analysis.report.model_sets`).

>>> coverage_of(report, group, {"n": 20, "p": 0.6}, "n20_p0.6", "n = 20, p = 0.6")  # doctest: +SKIP

Exercised by ``pytest tests/test_coverage.py tests/test_html_report.py``.
"""

from __future__ import annotations

import pandas as pd

from mip.config.budgets import slug as budget_slug

from mip.analysis import coverage, slices
from mip.analysis.report import behind, figures, trace_figures
from mip.analysis.report.titles import holds
from mip.analysis.report.figures import later

#: What a Table 3 row is: one slice of the setting (model × budget × pool).
ROW = ["model", "budget", "pool"]


def coverage_of(report, group: pd.DataFrame, setting: dict, tag: str, name: str) -> None:
    """Table 3 per slice over every valid run; Fig. 5 pooled over the report's trace pool
    (:mod:`mip.analysis.report.model_sets`) per budget and pool, per model, and per pattern (Fig. 21)."""
    traced = coverage.with_coverage(group)  # the trace scan, once for the table and the curves
    cov = slices.by_budget(coverage.coverage_table(group, ROW, traced))
    if cov.empty:
        report.notes.append(f"{name}: no valid experiment, so no coverage table.")
        return
    shown = cov.assign(bin=cov["bin"].astype(str)).round(4)
    report.table(shown, f"table3_coverage_{tag}",
                 f"Table 3 at {name}: valid experiments per coverage bin with their share and accuracy; the bins "
                 f"add up to every valid experiment, those without a reasoning trace in '{coverage.NO_TRACE}'.",
                 behind.coverage_bins(shown, group, traced, ROW, f"Table 3, {tag}"))
    report.mentioned |= dict(zip(traced["key"], traced["mentioned_ids"]))
    n, p = int(setting["n"]), float(setting["p"])
    for (budget, pool), sub in sorted(traced.groupby(["budget", "pool"]), key=lambda item: (
            slices.budget_order(traced["budget"]).index(str(item[0][0])), str(item[0][1]))):
        suffix, where = f"{tag}_{budget_slug(budget)}_{pool}", f"{name}, budget {budget}, {pool} pool"
        members, who = report.pool.select(sub)
        rates = coverage.mention_rates(sub, n, sub)
        pooled = (coverage.mention_rates(members, n, members.assign(model="pooled")) if not members.empty
                  else rates.iloc[0:0])
        all_patterns, each_pattern = rates["pattern"] == coverage.POOLED, rates["pattern"] != coverage.POOLED
        report.figure(later(trace_figures.mention_rates)(pooled[pooled["pattern"] == coverage.POOLED], n, p, who)
                      if not members.empty else figures.Missing(f"Fig. 5 at {where}: {who}"),
                      f"fig5_mention_rates_{suffix}", f"Fig. 5 at {where}: per-ID mention rate over the valid "
                      "experiments with a trace, all patterns, over the models its title names (§5.1: full reasoning "
                      "traces).")
        report.figure(later(trace_figures.mention_rates)(rates[all_patterns], n, p, f"per model, {holds(sub)}"),
                      f"fig5_mention_rates_per_model_{suffix}", f"Fig. 5 per model at {where}: each model's own curve, "
                      "never averaged with another's.")
        both = pd.concat([pooled, rates])
        report.data(both, f"mention_rates_{suffix}", "Per-ID mention rates behind Figs. 5 and 21: per model "
                    f"('pooled': {who}) and pattern ('all patterns' pooled), per position.",
                    behind.mention_rates(both, sub, f"budget {budget}, {pool} pool, {tag}"))
        report.figure(later(trace_figures.mention_rates)(rates[each_pattern], n, p, f"per model, {holds(sub)}"),
                      f"fig21_mention_rates_{suffix}", "Per pattern with block boundaries (Fig. 21), one curve per "
                      "model.")


def coverage_grids(report, group: pd.DataFrame, name: str, tag: str) -> None:
    """Fig. 22 (mean coverage per (n, p) cell, pooled over the report's trace pool) and Fig. 23 (per model),
    each a part of the report (:meth:`mip.analysis.report.Report.part`): one more job scans again the
    traces of the figures it reaches, not the grid's."""
    traced = group[coverage.has_trace(group)]  # those the figures scan (mip.analysis.coverage.with_coverage)
    if traced.empty:
        return
    members, who = report.pool.select(traced)
    if members.empty:
        report.figure(later(figures.Missing)(f"Fig. 22 at {name}: {who}"), f"fig22_coverage_pooled_{tag}",
                      "Mean coverage per (n, p) cell, pooled over models (Fig. 22).")
    for label, sub in [("pooled", members), *traced.groupby("model")]:
        if not sub.empty:
            report.part(f"{tag}: coverage of {label}", [sub, who],
                        lambda: coverage_grid(report, label, coverage.with_coverage(sub), who, name, tag))


def coverage_grid(report, label: str, sub: pd.DataFrame, who: str, name: str, tag: str) -> None:
    """Fig. 22 (``label`` pooled: the trace pool's, ``who``) or Fig. 23 (a model's) from ``sub``
    (:func:`mip.analysis.coverage.with_coverage`)."""
    cell = sub.groupby(["n", "p"]).agg(coverage=("coverage", "mean"), mentioned=("mentioned", "mean"),
                                       size=("coverage", "size")).reset_index()
    fig = "fig22" if label == "pooled" else "fig23"
    title = f"{who if label == 'pooled' else label}, {name}: mean explicit coverage (Fig. {fig[3:]}); {holds(sub)}"
    report.figure(later(figures.heatmap)(cell.pivot(index="p", columns="n", values="coverage"), title,
                                         "coverage (%)",
                                         counts=cell.pivot(index="p", columns="n", values="size"),
                                         extra=cell.pivot(index="p", columns="n", values="mentioned")),
                  f"{fig}_coverage_{label.replace(' ', '_')}_{tag}",
                  "Mean coverage (% of IDs mentioned) per cell over valid experiments with a trace, (mean count of "
                  "mentioned IDs) below." + (f" {who[0].upper()}{who[1:]}." if label == "pooled" else ""),
                  behind.numbers(cell, sub, ["n", "p"], ("coverage", "mentioned", "size"),
                                 f"Coverage of {label}, {name}: valid experiments with a trace in cell"))
