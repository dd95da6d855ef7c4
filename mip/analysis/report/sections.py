"""The report's sections, in the paper's order; each computes inside slices (mip.analysis.slices).

Every function takes the records of its section (see :func:`mip.analysis.slices.sections`) and a
:class:`mip.analysis.report.Report`, and adds tables and figures that name their slice or setting;
each table (and each figure's table of numbers) with the experiments behind each of its cells,
taken in the same loop from the same records (:mod:`mip.analysis.report.cells`,
:mod:`mip.analysis.report.behind`). The generalisability section is
:mod:`mip.analysis.report.grid_section`, the core section's coverage
:mod:`mip.analysis.report.coverage_section`.
"""

from __future__ import annotations

import pandas as pd

from mip.analysis import inference, pairs, slices, stats
from mip.experiment.instances import PATTERNS
from mip.analysis.report import behind, coverage_section, figures, metric_tables as tables
from mip.analysis.report.behind import numbers
from mip.analysis.report.cells import Experiments, Links, grouped
from mip.analysis.report.titles import holds, plural
from mip.analysis.report.figures import later

#: What a core-section table row is: one slice of the setting (model × budget × pool).
ROW = coverage_section.ROW
ACCURACY = behind.ACCURACY


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
    key = {m: (m.split(" · ")[0], rank[str(b)], str(p))
           for m, b, p in zip(firsts["model"], firsts["budget"], firsts["pool"])}
    return sorted(key, key=key.__getitem__)


def in_row_order(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` (one or more rows per :func:`_rows` label) with its labels in :func:`row_order`, stably."""
    rank = {m: i for i, m in enumerate(row_order(rows))}
    return table.sort_values("model", kind="stable", key=lambda c: c.map(rank)).reset_index(drop=True)


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
    """Tables 2, 6, 3 and Figs. 2, 5, 14–18, 21 for each core setting (each a part of the report:
    :meth:`mip.analysis.report.Report.part`)."""
    for setting, group in slices.of(frame, ["n", "p"]):
        report.part(slices.file_tag(setting, ["n", "p"]), group, lambda: core_setting(report, group, setting))


def core_setting(report, group: pd.DataFrame, setting: dict) -> None:
    """The core section at one (n, p) ``setting``, from its records ``group``."""
    tag = slices.file_tag(setting, ["n", "p"])
    name = slices.label(setting, ["n", "p"]) + " (standard prompt, single call, core orderings)"
    rows = _rows(group)
    patterns = in_row_order(stats.pattern_table(rows), rows)
    core_tables(report, group, rows, patterns, tag, name)
    core_figures(report, group, rows, patterns, tag, name)
    cell_figures(report, group, rows, tag, name)
    pools(report, group, tag, name)
    coverage_section.coverage_of(report, group, setting, tag, name)


def core_tables(report, group: pd.DataFrame, rows: pd.DataFrame, patterns: pd.DataFrame, tag: str, name: str) -> None:
    """Table 2 and its numbers, the intervals and tests, and accuracy per pattern of one core setting."""
    models = model_rows(group, ROW)
    raw = behind.model_rows(models, group, ROW, tag)
    report.table(tables.table2(models), f"table2_{tag}",
                 f"Tables 2 and 6 at {name}: one row per slice (model × budget × pool). Valid-only and "
                 "all-experiment accuracy (mean ± sd over selection seeds), Δ with π⁺/π⁻ († one paired seed, ‡ "
                 "two), invalid rate; 'Sets' is the instance sets with a valid experiment behind each row. π⁺ / π⁻ by "
                 f"short names, every tie named (a = b), π⁻ '–' where no pattern is worse: {stats.legend()}. "
                 "π⁺, π⁻, Δ and the tests below compare patterns on the experiments every pattern holds."
                 + "".join(f" {note}" for note in pattern_notes(group, ROW)), behind.table2(raw))
    report.table(models.round(6), f"table2_numbers_{tag}", "The numbers behind the table above, unrounded for reuse.",
                 raw)
    table, links = intervals(group, tag)
    report.table(table, f"intervals_and_tests_{tag}",
                 f"Beyond the paper, at {name}: 95 % bootstrap intervals of accuracy and Δ and a paired test of π⁺ "
                 f"against π⁻ on matched instance sets. With fewer than {inference.MIN_PAIRS} pairs they read "
                 "'not testable': no outcome of so few sets could be significant.", links)
    shown, links = numbers(patterns, rows, ["model", "pattern"], ACCURACY, f"Accuracy per pattern, {tag}")
    report.table(shown, f"patterns_by_model_{tag}", f"Valid-only accuracy per slice and pattern at {name}, mean and sd "
                 "over selection seeds.", links)


def core_figures(report, group: pd.DataFrame, rows: pd.DataFrame, patterns: pd.DataFrame, tag: str, name: str) -> None:
    """Figs. 2, 17, 18 and 14 of one core setting, each with the table of its numbers."""
    chosen = _representative(patterns)
    what = f"Accuracy per pattern, {tag}"
    report.figure(later(figures.pattern_bars)(patterns, chosen, f"Representative patterns, {name}; {holds(group)}"),
                  f"fig2_representative_patterns_{tag}", f"Fig. 2 at {name}; error bars: sd over seeds; n/a: no "
                  "valid experiment.", numbers(patterns[patterns["pattern"].astype(str).isin(chosen or ())], rows,
                                               ["model", "pattern"], ACCURACY, what) if chosen else None)
    report.figure(later(figures.pattern_bars)(patterns, None, f"All patterns, {name}; {holds(group)}"),
                  f"fig17_all_patterns_{tag}",
                  f"All seven patterns per slice (Fig. 17) at {name}.",
                  numbers(patterns, rows, ["model", "pattern"], ACCURACY, what))
    by_task = in_row_order(stats.pattern_table(rows, ["model", "task"]), rows)
    overlaid = f"Task accuracy per pattern, counterpart pairs overlaid (Fig. 18), {name}; {holds(group)}"
    report.figure(later(figures.counterpart_pairs)(by_task, overlaid), f"fig18_counterparts_{tag}",
                  f"Fig. 18 at {name}: per task, each counterpart pair overlaid (filled: the first of the pair, "
                  "open: its counterpart) beside random; one row of panels per slice, as no figure pools two slices; "
                  "error bars: sd over selection seeds.",
                  numbers(by_task, rows, ["model", "task", "pattern"], ACCURACY, f"Experiments per task and pattern, "
                          f"{tag}"))
    by_kind = f"Mistakes and invalid outputs by kind (Fig. 14), {name}; {holds(group)}"
    report.figure(later(figures.error_types)(rows, by_kind), f"fig14_error_types_{tag}",
                  f"Mistakes and invalid outputs by kind (Fig. 14) at {name}.",
                  behind.error_kinds(rows, tag))


def cell_figures(report, group: pd.DataFrame, rows: pd.DataFrame, tag: str, name: str) -> None:
    """Figs. 15 and 16 of one core setting (task × pattern and task cells per slice), with their numbers."""
    cell = rows.assign(cell=rows["task"] + " / " + rows["pattern"])
    named = (*PATTERNS, *sorted(set(rows["pattern"]) - set(PATTERNS)))
    order = [f"{t} / {p}" for t in sorted(rows["task"].unique()) for p in named]
    invalid = cell.pivot_table(index="model", columns="cell", values="valid", aggfunc=lambda v: int((~v).sum()))
    total = cell.pivot_table(index="model", columns="cell", values="valid", aggfunc="size")
    order = [c for c in order if c in invalid.columns]
    # Task × pattern cells as rows (35 on the paper's grid), slices as columns: a figure as tall as it needs,
    # never too wide.
    columns = [c for c in row_order(rows) if c in invalid.index]  # 20k before 100k, not by the label's text
    counts = in_row_order(rows.groupby(["model", "task", "pattern"]).agg(
        invalid=("valid", lambda v: int((~v).sum())), experiments=("valid", "size")).reset_index(), rows)
    invalid, total = invalid.loc[columns, order].T, total.loc[columns, order].T
    title = f"Invalid experiments per task and pattern (Fig. 15), {name}; {holds(group)}"
    report.figure(later(figures.heatmap)(invalid, title, "invalid experiments", counts=total, scale=1.0, cmap="Reds"),
                  f"fig15_invalid_counts_{tag}",
                  "Invalid experiments per task × pattern (rows) and slice (columns); under each count, (n=…) the "
                  "experiments of that cell.", numbers(counts, rows, ["model", "task", "pattern"],
                                                       ("invalid", "experiments"),
                                                       f"Experiments per task and pattern, {tag}"))
    per_task = stats.accuracy(rows, ["model", "task"])
    shown = [c for c in columns if c in set(per_task["model"])]
    accuracy = per_task.pivot(index="model", columns="task", values="acc_mean").loc[shown]
    valid = per_task.pivot(index="model", columns="task", values="valid").loc[shown]
    report.figure(later(figures.heatmap)(accuracy, f"Valid-only accuracy per task (Fig. 16), {name}; {holds(group)}",
                                         "accuracy (%)", counts=valid),
                  f"fig16_task_accuracy_{tag}", "Valid-only accuracy per slice and task, pooled over patterns and "
                  "labels.",
                  numbers(in_row_order(per_task, rows), rows, ["model", "task"], ACCURACY, f"Accuracy per task, {tag}"))


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
    table = tables.side_by_side(model_rows(rows, ["model", "pool"]), "pool", order)
    report.table(table, f"pools_{tag}", f"The filtered pool beside the unfiltered one at {name} (App. C.1), per model "
                 f"and budget, each metric and its change. {both.note()}",
                 behind.side_by_side(table, rows, "pool", order, tag))


def intervals(group: pd.DataFrame, tag: str) -> tuple[pd.DataFrame, Links]:
    """Per slice: the accuracy interval on its experiments, the Δ interval on the experiments of π⁺
    and π⁻ every pattern holds, and the paired test on their valid pairs (:func:`mip.analysis.pairs.valid_pairs`)."""
    rows, links = [], []
    for row, sub in slices.of(group, ROW):
        where = f"{' · '.join(str(row[c]) for c in ROW)} ({tag})"
        gap = stats.best_worst_gap(sub)
        low, high = inference.bootstrap_accuracy(sub)
        out = {**row, "sets": inference.sets_of(sub), "acc_ci_low": low, "acc_ci_high": high, "delta_ci_low": None,
               "delta_ci_high": None, "test": "not testable", "pairs": 0, "p_value": None}
        every = Experiments.of(f"Intervals, {where}: every experiment", sub)
        links.append({"sets": every, "acc_ci_low": every, "acc_ci_high": every})
        if gap.best and gap.worst and gap.best != gap.worst:
            kept = gap.compared.frame  # Δ's experiments: those every pattern holds (mip.analysis.pairs.patterns)
            out["delta_ci_low"], out["delta_ci_high"] = inference.bootstrap_gap(kept, gap.best, gap.worst)
            test = inference.paired_test(kept, gap.best, gap.worst)
            out.update({"test": test.test, "pairs": test.pairs, "p_value": test.p_value})
            resampled = Experiments.of(f"Intervals, {where}: the Δ interval's experiments ({gap.best} and {gap.worst} "
                                       "in the instance sets every pattern holds)",
                                       pairs.two_patterns(kept, gap.best, gap.worst).frame)
            paired = Experiments.of(f"Intervals, {where}: the paired test's experiments ({gap.best} against "
                                    f"{gap.worst}, valid, in the instance sets holding both)",
                                    pairs.valid_pairs(kept, gap.best, gap.worst))
            links[-1] |= {"delta_ci_low": resampled, "delta_ci_high": resampled,
                          "test": paired, "pairs": paired, "p_value": paired}
        if out["test"] in ("not testable", "none"):
            out["test"] = f"not testable ({out['pairs']} pairs < {inference.MIN_PAIRS})"
        rows.append(out)
    table = pd.DataFrame(rows)
    p_values = table["p_value"]
    table = table.round(4)
    # An exact p of 1.9e-9 is not 0: p-values keep three significant digits.
    table["p_value"] = [None if pd.isna(v) else float(f"{v:.3g}") for v in p_values]
    return table, tuple(links)


def expanded(report, frame: pd.DataFrame) -> None:
    """§5.2.1's expanded orderings (records with a shuffle seed): per slice, not with the core; one
    part of the report, its tables spanning every slice."""
    report.part("every slice", frame, lambda: _expanded(report, frame))


def _expanded(report, frame: pd.DataFrame) -> None:
    table = model_rows(frame, slices.SLICE)
    report.table(table.round(4), "expanded_orderings", "Expanded orderings (structured patterns over 50 within-label "
                 "shuffles, §5.2.1), one row per slice; kept apart from the core orderings.",
                 behind.model_rows(table, frame, slices.SLICE, "expanded orderings"))
    patterns = stats.pattern_table(frame, slices.SLICE)
    report.table(patterns.assign(pattern=patterns["pattern"].astype(str)).round(4), "expanded_orderings_patterns",
                 "Accuracy per pattern within each expanded-orderings slice.",
                 grouped(patterns, frame, [*slices.SLICE, "pattern"], ACCURACY,
                         "Expanded orderings, accuracy per pattern"))


def _representative(patterns: pd.DataFrame) -> tuple[str, ...] | None:
    present = set(patterns["pattern"].astype(str))
    chosen = tuple(p for p in figures.REPRESENTATIVE if p in present)
    return chosen or None
