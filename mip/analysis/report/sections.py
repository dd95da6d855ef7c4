"""The report's sections, in the paper's order; each computes inside slices (mip.analysis.slices).

Every function takes the records of its section (see :func:`mip.analysis.slices.sections`) and a
:class:`mip.analysis.report.Report`, and adds tables and figures that name their slice or setting.
"""

from __future__ import annotations

import pandas as pd

from mip.config.budgets import slug as budget_slug

from mip.analysis import coverage, inference, pairs, slices, stats
from mip.experiment.instances import PATTERNS
from mip.analysis.report import figures, metric_tables as tables, trace_figures
from mip.analysis.report.figures import later
from mip.analysis.report.titles import plural, tasks_of

#: What a core-section table row is: one slice of the setting (model × budget × pool).
ROW = ["model", "budget", "pool"]


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``model`` as the row label: the model, plus budget and pool where the
    rows differ in them (so that a figure never shows two slices under one name)."""
    out = frame.copy()
    for column in ("budget", "pool"):
        if out[column].nunique() > 1:
            out["model"] = out["model"] + " · " + out[column].astype(str)
    return out


def row_order(rows: pd.DataFrame) -> list[str]:
    """The row labels of :func:`_rows` in reading order: by model, then budget by its value (20k
    before 100k, :func:`mip.analysis.slices.budget_order`), then pool."""
    firsts = rows.drop_duplicates("model")
    rank = {b: i for i, b in enumerate(slices.budget_order(firsts["budget"]))}
    key = {m: (m.split(" · ")[0], rank[str(b)], str(p)) for m, b, p in zip(firsts["model"], firsts["budget"], firsts["pool"])}
    return sorted(key, key=key.__getitem__)


def in_row_order(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` (one or more rows per :func:`_rows` label) with its labels in :func:`row_order`, stably."""
    rank = {m: i for i, m in enumerate(row_order(rows))}
    return table.sort_values("model", kind="stable", key=lambda c: c.map(rank)).reset_index(drop=True)


def holds(frame: pd.DataFrame) -> str:
    """What a figure's records are, for its title: ``task ner, 36 experiments`` or ``tasks a, b pooled, …``."""
    return f"{tasks_of(frame)}, {plural(len(frame), 'experiment')}"


def rests_on(sets: int, paired_seeds: int, dropped: int = 0) -> str:
    """The evidence behind a row, in words (``dropped``: experiments no other pattern holds,
    left out of Δ: :func:`mip.analysis.pairs.patterns`).

    >>> rests_on(2, 1), rests_on(1, 0), rests_on(30, 3, 12)
    ('2 sets, 1 paired seed', '1 set, 0 paired seeds', '30 sets, 3 paired seeds, 12 unmatched experiments not in Δ')
    """
    return (f"{sets} set{'' if sets == 1 else 's'}, {paired_seeds} paired seed{'' if paired_seeds == 1 else 's'}"
            + (f", {plural(int(dropped), 'unmatched experiment')} not in Δ" if dropped else ""))


def pattern_notes(group: pd.DataFrame, by: list[str]) -> list[str]:
    """Per row of a :func:`model_rows` table whose patterns did not all run on the same
    experiments: what Δ compared and what it left out (:func:`mip.analysis.pairs.patterns`)."""
    notes = []
    for row, sub in slices.of(group, by):
        compared = pairs.patterns(sub)
        if compared.counts["dropped"].any():
            notes.append(f"Δ of {' · '.join(str(row[c]) for c in by)}: {compared.note()}")
    return notes


def model_rows(group: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    models = stats.model_table(group, by)
    models["rests on"] = [rests_on(s, k, d) for s, k, d in zip(models["sets"], models["paired_seeds"],
                                                                  models["patterns_dropped"])]
    if "budget" in by and not models.empty:  # budgets by value: 20k before 100k
        rank = {b: i for i, b in enumerate(slices.budget_order(models["budget"]))}
        models = models.sort_values([c for c in by if c != "budget"] + ["budget"], kind="stable",
                                    key=lambda c: c.map(rank) if c.name == "budget" else c).reset_index(drop=True)
    return models


def core(report, frame: pd.DataFrame) -> None:
    """Tables 2, 6, 3 and Figs. 2, 5, 14–18, 21 for each core setting."""
    for setting, group in slices.of(frame, ["n", "p"]):
        tag = slices.file_tag(setting, ["n", "p"])
        name = slices.label(setting, ["n", "p"]) + " (standard prompt, single call, core orderings)"
        models = model_rows(group, ROW)
        report.table(tables.table2(models), f"table2_{tag}",
                     f"Tables 2 and 6 at {name}: one row per slice (model × budget × pool). Valid-only and "
                     "all-experiment accuracy (mean ± sd over selection seeds), Δ with π⁺/π⁻ († one paired seed, ‡ "
                     "two), invalid rate; 'Sets' is the instance sets with a valid experiment behind each row. π⁺ / π⁻ by "
                     f"short names, every tie named (a = b), π⁻ '–' where no pattern is worse: {stats.legend()}. "
                     "π⁺, π⁻, Δ and the tests below compare patterns on the experiments every pattern holds."
                     + "".join(f" {note}" for note in pattern_notes(group, ROW)))
        report.table(models.round(6), f"table2_numbers_{tag}", "The numbers behind the table above, unrounded for reuse.")
        report.table(intervals(group), f"intervals_and_tests_{tag}",
                     f"Beyond the paper, at {name}: 95 % bootstrap intervals of accuracy and Δ and a paired test of π⁺ "
                     f"against π⁻ on matched instance sets. With fewer than {inference.MIN_PAIRS} pairs they read "
                     "'not testable': no outcome of so few sets could be significant.")
        rows = _rows(group)
        patterns = in_row_order(stats.pattern_table(rows), rows)
        report.table(patterns.assign(pattern=patterns["pattern"].astype(str)).round(4), f"patterns_by_model_{tag}",
                     f"Valid-only accuracy per slice and pattern at {name}, mean and sd over selection seeds.")
        report.figure(later(figures.pattern_bars)(patterns, _representative(patterns),
                                                  f"Representative patterns, {name}; {holds(group)}"),
                      f"fig2_representative_patterns_{tag}", f"Fig. 2 at {name}; error bars: sd over seeds; n/a: no "
                      "valid experiment.")
        report.figure(later(figures.pattern_bars)(patterns, None, f"All patterns, {name}; {holds(group)}"), f"fig17_all_patterns_{tag}",
                      f"All seven patterns per slice (Fig. 17) at {name}.")
        by_task = in_row_order(stats.pattern_table(rows, ["model", "task"]), rows)
        report.figure(later(figures.counterpart_pairs)(by_task, f"Task accuracy per pattern, counterpart pairs overlaid (Fig. 18), "
                                                         f"{name}; {holds(group)}"), f"fig18_counterparts_{tag}",
                      f"Fig. 18 at {name}: per task, each counterpart pair overlaid (filled: the first of the pair, "
                      "open: its counterpart) beside random; one row of panels per slice, as no figure pools two slices; "
                      "error bars: sd over selection seeds.")
        report.figure(later(figures.error_types)(rows, f"Mistakes and invalid outputs by kind (Fig. 14), {name}; {holds(group)}"),
                      f"fig14_error_types_{tag}", f"Mistakes and invalid outputs by kind (Fig. 14) at {name}.")
        cell = rows.assign(cell=rows["task"] + " / " + rows["pattern"])
        order = [f"{t} / {p}" for t in sorted(rows["task"].unique()) for p in (*PATTERNS, *sorted(set(rows["pattern"]) - set(PATTERNS)))]
        invalid = cell.pivot_table(index="model", columns="cell", values="valid", aggfunc=lambda v: int((~v).sum()))
        total = cell.pivot_table(index="model", columns="cell", values="valid", aggfunc="size")
        order = [c for c in order if c in invalid.columns]
        # Task × pattern cells as rows (35 on the paper's grid), slices as columns: a figure as tall as it needs, never too wide.
        columns = [c for c in row_order(rows) if c in invalid.index]  # 20k before 100k, not by the label's text
        invalid, total = invalid.loc[columns, order].T, total.loc[columns, order].T
        report.figure(later(figures.heatmap)(invalid, f"Invalid experiments per task and pattern (Fig. 15), {name}; {holds(group)}",
                                             "invalid experiments", counts=total, scale=1.0, cmap="Reds"),
                      f"fig15_invalid_counts_{tag}",
                      "Invalid experiments per task × pattern (rows) and slice (columns); under each count, (n=…) the "
                      "experiments of that cell.")
        per_task = stats.accuracy(rows, ["model", "task"])
        shown = [c for c in columns if c in set(per_task["model"])]
        report.figure(later(figures.heatmap)(per_task.pivot(index="model", columns="task", values="acc_mean").loc[shown],
                                             f"Valid-only accuracy per task (Fig. 16), {name}; {holds(group)}", "accuracy (%)",
                                             counts=per_task.pivot(index="model", columns="task", values="valid").loc[shown]),
                      f"fig16_task_accuracy_{tag}", "Valid-only accuracy per slice and task, pooled over patterns and labels.")
        pools(report, group, tag, name)
        coverage_of(report, group, setting, tag, name)


def pool_rows(group: pd.DataFrame) -> tuple[pairs.Matched | None, pd.DataFrame, list[str]]:
    """The pool comparison's experiments (:func:`pools`): the matched ones (None where no model ran
    two pools), each labelled ``model · budget`` as the table's rows, and the pools in its order."""
    several = group.groupby(["base_model", "budget"])["pool"].transform("nunique") > 1
    if not several.any():
        return None, group.iloc[0:0], []
    both = pairs.matched(group[several], "pool", within=["base_model", "budget"], order=["unfiltered"])
    rows = both.frame.assign(model=both.frame["model"] + " · " + both.frame["budget"].astype(str))
    held = set(rows["pool"])
    return both, rows, [p for p in ("unfiltered", "filtered") if p in held] + sorted(held - {"unfiltered", "filtered"})


def pools(report, group: pd.DataFrame, tag: str, name: str) -> None:
    """A filtered pool beside the unfiltered one (App. C.1), per model and budget, on the experiments
    both hold (:func:`mip.analysis.pairs.matched`); nothing where no model ran both."""
    both, rows, order = pool_rows(group)
    if both is None:
        return
    if both.empty:
        report.notes.append(f"Filtered and unfiltered pools at {name} are not compared: {both.note()}")
        return
    report.table(tables.side_by_side(model_rows(rows, ["model", "pool"]), "pool", order), f"pools_{tag}",
                 f"The filtered pool beside the unfiltered one at {name} (App. C.1), per model and budget, each "
                 f"metric and its change. {both.note()}")


def intervals(group: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for row, sub in slices.of(group, ROW):
        gap = stats.best_worst_gap(sub)
        low, high = inference.bootstrap_accuracy(sub)
        out = {**row, "sets": inference.sets_of(sub), "acc_ci_low": low, "acc_ci_high": high, "delta_ci_low": None,
               "delta_ci_high": None, "test": "not testable", "pairs": 0, "p_value": None}
        if gap.best and gap.worst and gap.best != gap.worst:
            kept = gap.compared.frame  # Δ's experiments: those every pattern holds (mip.analysis.pairs.patterns)
            out["delta_ci_low"], out["delta_ci_high"] = inference.bootstrap_gap(kept, gap.best, gap.worst)
            test = inference.paired_test(kept, gap.best, gap.worst)
            out.update({"test": test.test, "pairs": test.pairs, "p_value": test.p_value})
        if out["test"] in ("not testable", "none"):
            out["test"] = f"not testable ({out['pairs']} pairs < {inference.MIN_PAIRS})"
        rows.append(out)
    table = pd.DataFrame(rows)
    p_values = table["p_value"]
    table = table.round(4)
    # An exact p of 1.9e-9 is not 0: p-values keep three significant digits.
    table["p_value"] = [None if pd.isna(v) else float(f"{v:.3g}") for v in p_values]
    return table


def coverage_of(report, group: pd.DataFrame, setting: dict, tag: str, name: str) -> None:
    """Table 3 per slice over every valid run; Fig. 5 pooled over the report's trace pool
    (:mod:`mip.analysis.report.model_sets`) per budget and pool, per model, and per pattern (Fig. 21)."""
    traced = coverage.with_coverage(group)  # the trace scan, once for the table and the curves
    cov = slices.by_budget(coverage.coverage_table(group, ROW, traced))
    if cov.empty:
        report.notes.append(f"{name}: no valid experiment, so no coverage table.")
        return
    report.table(cov.assign(bin=cov["bin"].astype(str)).round(4), f"table3_coverage_{tag}",
                 f"Table 3 at {name}: valid experiments per coverage bin with their share and accuracy; the bins "
                 f"add up to every valid experiment, those without a reasoning trace in '{coverage.NO_TRACE}'.")
    n, p = int(setting["n"]), float(setting["p"])
    for (budget, pool), sub in sorted(traced.groupby(["budget", "pool"]), key=lambda item: (
            slices.budget_order(traced["budget"]).index(str(item[0][0])), str(item[0][1]))):
        suffix, where = f"{tag}_{budget_slug(budget)}_{pool}", f"{name}, budget {budget}, {pool} pool"
        members, who = report.pool.select(sub)
        rates = coverage.mention_rates(sub, n, sub)
        pooled = coverage.mention_rates(members, n, members.assign(model="pooled")) if not members.empty else rates.iloc[0:0]
        report.figure(later(trace_figures.mention_rates)(pooled[pooled["pattern"] == coverage.POOLED], n, p, who)
                      if not members.empty else figures.Missing(f"Fig. 5 at {where}: {who}"),
                      f"fig5_mention_rates_{suffix}", f"Fig. 5 at {where}: per-ID mention rate over the valid experiments "
                      "with a trace, all patterns, over the models its title names (§5.1: full reasoning traces).")
        report.figure(later(trace_figures.mention_rates)(rates[rates["pattern"] == coverage.POOLED], n, p, f"per model, {holds(sub)}"),
                      f"fig5_mention_rates_per_model_{suffix}", f"Fig. 5 per model at {where}: each model's own curve, "
                      "never averaged with another's.")
        report.data(pd.concat([pooled, rates]), f"mention_rates_{suffix}", "Per-ID mention rates behind Figs. 5 and "
                    f"21: per model ('pooled': {who}) and pattern ('all patterns' pooled), per position.")
        report.figure(later(trace_figures.mention_rates)(rates[rates["pattern"] != coverage.POOLED], n, p, f"per model, {holds(sub)}"),
                      f"fig21_mention_rates_{suffix}", "Per pattern with block boundaries (Fig. 21), one curve per model.")


def coverage_grids(report, group: pd.DataFrame, name: str, tag: str) -> None:
    """Fig. 22 (mean coverage per (n, p) cell, pooled over the report's trace pool) and Fig. 23 (per model)."""
    traced = coverage.with_coverage(group)
    if traced.empty:
        return
    members, who = report.pool.select(traced)
    if members.empty:
        report.figure(figures.Missing(f"Fig. 22 at {name}: {who}"), f"fig22_coverage_pooled_{tag}",
                      "Mean coverage per (n, p) cell, pooled over models (Fig. 22).")
    for label, sub in [("pooled", members), *traced.groupby("model")]:
        if sub.empty:
            continue
        cell = sub.groupby(["n", "p"]).agg(coverage=("coverage", "mean"), mentioned=("mentioned", "mean"),
                                           size=("coverage", "size")).reset_index()
        fig = "fig22" if label == "pooled" else "fig23"
        title = f"{who if label == 'pooled' else label}, {name}: mean explicit coverage (Fig. {fig[3:]}); {holds(sub)}"
        report.figure(later(figures.heatmap)(cell.pivot(index="p", columns="n", values="coverage"), title, "coverage (%)",
                                             counts=cell.pivot(index="p", columns="n", values="size"),
                                             extra=cell.pivot(index="p", columns="n", values="mentioned")),
                      f"{fig}_coverage_{label.replace(' ', '_')}_{tag}",
                      "Mean coverage (% of IDs mentioned) per cell over valid experiments with a trace, (mean count of "
                      "mentioned IDs) below." + (f" {who[0].upper()}{who[1:]}." if label == "pooled" else ""))


def generalisability(report, frame: pd.DataFrame) -> None:
    """Fig. 3 (accuracy over n × p, random with its sd over order seeds), Figs. 10/11 and 22/23."""
    for setting, group in slices.of(frame, ["budget", "pool"]):
        tag, name = slices.file_tag(setting, ["budget", "pool"]), slices.label(setting, ["budget", "pool"])
        cells = stats.accuracy(group, ["model", "pattern", "n", "p"])
        report.table(cells.round(4), f"generalisability_cells_{tag}",
                     f"Accuracy per (n, p) cell, model and pattern at {name} (§4.2); sd over selection seeds. "
                     + frame.attrs.get("matched", ""))
        order_sd = stats.random_order_sd(group, ["model", "n", "p"])
        for (model, pattern), sub in cells.groupby(["model", "pattern"]):
            if pattern not in figures.REPRESENTATIVE:
                continue
            sd = None
            if pattern == "random":
                sd = order_sd[order_sd["model"] == model].pivot(index="p", columns="n", values="order_sd")
            report.figure(later(figures.heatmap)(sub.pivot(index="p", columns="n", values="acc_mean"),
                                                 f"Fig. 3: {model}, {pattern}, {name}: accuracy over n × p; "
                                                 f"{holds(group[(group['model'] == model) & (group['pattern'] == pattern)])}",
                                                 "accuracy (%)",
                                                 counts=sub.pivot(index="p", columns="n", values="valid"), sd=sd),
                          f"fig3_np_{model}_{pattern}_{tag}", f"Fig. 3 for {model} under {pattern}; random shows ± sd "
                          "over order seeds (the paper's), the structured patterns none.")
        for model, sub in group.groupby("model"):
            acc = stats.accuracy(sub, ["n", "p"])
            inv = stats.invalid_rates(sub, ["n", "p"])
            report.figure(later(figures.heatmap)(acc.pivot(index="p", columns="n", values="acc_mean"),
                                                 f"{model}, {name}: accuracy over n × p, all patterns (Fig. 10); {holds(sub)}",
                                                 "accuracy (%)",
                                                 counts=acc.pivot(index="p", columns="n", values="valid")),
                          f"fig10_np_accuracy_{model}_{tag}", "Valid-only accuracy pooled over patterns (Fig. 10).")
            report.figure(later(figures.heatmap)(inv.pivot(index="p", columns="n", values="invalid_rate"),
                                                 f"{model}, {name}: invalid rate over n × p (Fig. 11); {holds(sub)}", "invalid (%)",
                                                 counts=inv.pivot(index="p", columns="n", values="experiments"), cmap="Reds"),
                          f"fig11_np_invalid_{model}_{tag}", "Invalid rate pooled over patterns (Fig. 11).")
        coverage_grids(report, group, name, tag)


def expanded(report, frame: pd.DataFrame) -> None:
    """§5.2.1's expanded orderings (records with a shuffle seed): per slice, not with the core."""
    table = model_rows(frame, slices.SLICE)
    report.table(table.round(4), "expanded_orderings", "Expanded orderings (structured patterns over 50 within-label "
                 "shuffles, §5.2.1), one row per slice; kept apart from the core orderings.")
    patterns = stats.pattern_table(frame, slices.SLICE)
    report.table(patterns.assign(pattern=patterns["pattern"].astype(str)).round(4), "expanded_orderings_patterns",
                 "Accuracy per pattern within each expanded-orderings slice.")


def _representative(patterns: pd.DataFrame) -> tuple[str, ...] | None:
    present = set(patterns["pattern"].astype(str))
    chosen = tuple(p for p in figures.REPRESENTATIVE if p in present)
    return chosen or None
