"""The report's sections that compare conditions beyond the core: budgets (Table 6 side by
side, Figs. 9, Table 7) and prompt variants (Table 5, Figs. 4 and 20). Each compares on the
experiments every compared condition holds (:func:`mip.analysis.pairs.matched`) and says beside
its tables what each condition held, matched and dropped; a comparison with no matched pair is
not drawn, and the report says why.

Exercised by ``pytest tests/test_matched.py tests/test_report_sets.py``.
"""

from __future__ import annotations

import pandas as pd

from mip.config.budgets import slug as budget_slug

from mip.analysis import coverage, pairs, slices, stats
from mip.analysis.report import behind, figures, metric_tables as tables, variant_figures
from mip.analysis.report.cells import Experiments, Links, aligned, groups
from mip.analysis.report.sections import holds, model_rows
from mip.analysis.report.titles import tasks_of
from mip.analysis.report.figures import later


def budgets(report, frame: pd.DataFrame) -> None:
    """Table 6's budget rows side by side, Fig. 9 and Table 7 (coverage by budget), for each two
    budgets of a setting on the experiments both hold (:func:`mip.analysis.slices.budget_pairs`)."""
    for setting, group in slices.of(frame, ["n", "p", "pool"]):
        report.part(slices.file_tag(setting, ["n", "p", "pool"]), group, lambda: _budgets(report, group, setting))


def _budgets(report, group: pd.DataFrame, setting: dict) -> None:
    """The budget comparisons of one setting (n, p and pool): one part of the report."""
    tag, name = slices.file_tag(setting, ["n", "p", "pool"]), slices.label(setting, ["n", "p", "pool"])
    compared = slices.budget_pairs(group)
    if not compared:
        report.figure(later(figures.Missing)(f"Budgets at {name}: no experiment was run at two budgets."),
                      f"budgets_by_model_{tag}", f"Budgets compared per model at {name}.")
    for suffix, words, both in compared:
        _budget_pair(report, both, f"{tag}{suffix}", f"{name}, {words}" if suffix else name)


def _budget_pair(report, both, tag: str, name: str) -> None:
    """One comparison of two budgets (:func:`budgets`): its tables and figures, or why none is drawn."""
    if both.empty:
        missing = later(figures.Missing)(f"Budgets at {name}: no experiment was run at both budgets. {both.note()}")
        report.figure(missing, f"budgets_by_model_{tag}", f"Budgets compared per model at {name}.")
        return
    group = both.frame
    table = model_rows(group, ["model", "budget"])
    order = slices.budget_order(table["budget"])
    shown = tables.side_by_side(table, "budget", order)
    report.table(shown, f"budgets_{tag}", f"Budgets side by side at {name} (Table 6, App. C.5): per model, each metric "
                 f"at each budget and its change from the smallest (pp; accuracy mean ± sd over selection seeds). "
                 f"{both.note()}", behind.side_by_side(shown, group, "budget", order, tag))
    links = behind.model_rows(table, group, ["model", "budget"], tag)
    report.table(table.round(4), f"budgets_numbers_{tag}", "The numbers behind the table above, one row per model and "
                 "budget.", links)
    report.figure(later(figures.budgets)(table, f"Budgets compared at {name}; {holds(group)}"),
                  f"budgets_by_model_{tag}",
                  f"Budgets compared per model at {name}, on the matched experiments of the table above.",
                  (table.round(4), links))
    for model, sub in group.groupby("model"):
        acc = stats.accuracy(sub, ["budget", "pattern"])
        title = f"{model}, {name}: outcomes per pattern and budget (Fig. 9); {holds(sub)}"
        report.figure(later(figures.budget_outcomes)(sub, acc, title),
                      f"fig9_budgets_{model}_{tag}", f"Fig. 9 for {model} at {name}: correct, incorrect and invalid "
                      "shares of all experiments per pattern and budget; mean valid-only accuracy above the bars.",
                      behind.numbers(acc, sub, ["budget", "pattern"], behind.ACCURACY, f"{model} at {name}"))
    traced = coverage.with_coverage(group)
    by_budget = slices.by_budget(coverage.coverage_table(group, ["model", "budget"], traced))
    if not by_budget.empty:
        shown = by_budget.assign(bin=by_budget["bin"].astype(str)).round(4)
        report.table(shown, f"table7_coverage_by_budget_{tag}",
                     f"Coverage bins per model and budget at {name} (Table 7).",
                     behind.coverage_bins(shown, group, traced, ["model", "budget"], f"Table 7, {tag}"))


def prompt_variants(report, frame: pd.DataFrame) -> None:
    """Table 5 (accuracy, Δ, invalid per prompt variant and budget) and Fig. 4 on the experiments every
    variant of a model holds, or each variant against the standard prompt where they hold different
    ones (:func:`mip.analysis.pairs.variant_sets`); Fig. 20 per variant on those it shares with the standard prompt
    (:func:`mip.analysis.pairs.matched`); what was left out is counted beside each."""
    for setting, group in slices.of(frame, ["n", "p", "pool"]):
        report.part(slices.file_tag(setting, ["n", "p", "pool"]), group, lambda: _variants(report, group, setting))


def _variants(report, group: pd.DataFrame, setting: dict) -> None:
    """Table 5, Figs. 4 and 20 of one setting (n, p and pool): one part of the report."""
    tag, name = slices.file_tag(setting, ["n", "p", "pool"]), slices.label(setting, ["n", "p", "pool"])
    for suffix, words, every in pairs.variant_sets(group):
        _variant_table(report, every, f"{tag}{suffix}", f"{name}, {words}" if suffix else name)
    for budget, sub in group.groupby("budget"):
        where = f"{name}, budget {budget}"
        both = pairs.against(sub, "prompt_variant", "standard")
        notes = " ".join(m.note() for m in both.values())
        kept = pd.concat([m.frame for m in both.values()]) if both else sub.iloc[0:0]
        deltas = pd.concat([stats.variant_deltas(sub, ["model", "pattern"]),
                            stats.variant_deltas(sub).assign(pattern=variant_figures.OVERALL)], ignore_index=True)
        if deltas.empty:
            missing = later(figures.Missing)(f"Prompt-variant changes at {where}: no variant shares an "
                                             f"experiment with the standard prompt. {notes}")
            report.figure(missing, f"fig20_prompt_variants_{tag}_{budget_slug(budget)}", f"Fig. 20 at {where}.")
            continue
        links = _delta_links(deltas, both, where)
        report.table(deltas.round(4), f"prompt_variant_deltas_{tag}_{budget_slug(budget)}", f"Accuracy minus "
                     f"the standard prompt's per model, variant and pattern ('overall': all patterns), per "
                     f"selection seed on the experiments both prompts hold, at {where}. {notes}", links)
        report.figure(later(variant_figures.variant_deltas)(deltas, f"{where}; {tasks_of(kept)}"),
                      f"fig20_prompt_variants_{tag}_{budget_slug(budget)}",
                      f"Fig. 20 at {where}: per model and pattern, variant minus standard (pp), mean ± sd over the "
                      "selection seeds, on matched experiments (counts under the table above).",
                      (deltas.round(4), links))


def _variant_table(report, every, tag: str, name: str) -> None:
    """Table 5 and Fig. 4 of one prompt-variant comparison (:func:`mip.analysis.pairs.variant_sets`)."""
    if every.empty:
        report.figure(later(figures.Missing)(f"Prompt variants at {name}: no experiment was run under every variant. "
                                             f"{every.note()}"), f"fig4_prompt_variants_{tag}", f"Fig. 4 at {name}.")
        return
    by = ["model", "prompt_variant", "budget"]
    table = model_rows(every.frame, by)
    links = behind.model_rows(table, every.frame, by, tag)
    report.table(table.round(4), f"table5_prompt_variants_{tag}",
                 f"Table 5 at {name}: per model, prompt variant and budget, π⁺/π⁻ chosen separately for each. "
                 + every.note(), links)
    title = f"Prompt variants (Fig. 4), {name}; {holds(every.frame)}"
    report.figure(later(variant_figures.variant_panels)(table, title), f"fig4_prompt_variants_{tag}",
                  f"Fig. 4 at {name}: accuracy (top) and Δ (bottom) per prompt variant; sd over seeds; on the "
                  "matched experiments of Table 5.", (table.round(4), links))


def _delta_links(deltas: pd.DataFrame, both: dict[str, pairs.Matched], where: str) -> Links:
    """Each prompt-variant Δ (:func:`mip.analysis.stats.variant_deltas`) on the matched pairs of its
    variant and the standard prompt (:func:`mip.analysis.pairs.against`) of its model and pattern."""
    by = ["model", "pattern", "prompt_variant"]
    found = {}
    for variant, matched in both.items():
        shown = matched.frame.assign(prompt_variant=variant)  # the row's variant: its own and the standard's
        for key, rows in groups(pd.concat([shown, shown.assign(pattern=variant_figures.OVERALL)]), by):
            every = Experiments.of(f"{' · '.join(map(str, key))} against the standard prompt, {where}: "
                                   "the matched pairs", rows)
            found[key] = {c: every for c in ("delta_mean", "delta_sd", "seeds", "matched")}
    return aligned(deltas, by, found)
