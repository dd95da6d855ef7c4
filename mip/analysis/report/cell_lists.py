"""Which experiments each number of the HTML report was computed from.

A table cell's list is taken from the records grouped as the table groups them (the same
section records, :func:`mip.analysis.slices.of` over the same keys); nothing here computes a
number again. Each list is keyed by the table's name and the cell's row values, so that the
HTML writer (:mod:`mip.analysis.report.html`) finds it from the table it renders.

- Table 2 and its numbers (per slice row model × budget × pool), the budget comparison (model ×
  budget) and Table 5 (model × prompt variant × budget): every accuracy and the invalid rate rest on
  all the row's experiments (for budgets and variants: the matched ones the section compares,
  :func:`mip.analysis.pairs.matched`); Δ on the matched experiments of π⁺ and π⁻ (those every
  pattern holds, :func:`mip.analysis.pairs.patterns`) in the seeds paired for it (:meth:`mip.analysis.stats.Gap.paired`);
  each pattern named in π⁺ / π⁻ on that pattern's experiments.
- Accuracy per pattern (``patterns_by_model``): the row's experiments of that pattern.
- Table 3 and Table 7 (coverage bins, by model × budget × pool and by model × budget): the row's
  valid experiments in that bin (``no trace``: the valid ones without a trace).
- The side-by-side comparisons (budgets, pools: rows model × metric): each condition's column
  on the model's matched experiments under it, each change on those of both conditions.
- The prompt-variant Δs (``prompt_variant_deltas``): the matched pairs of the variant and the
  standard prompt (:func:`mip.analysis.pairs.against`) in the row's model and pattern.
- Mention rates (Figs. 5, 21): the model's valid experiments with a trace, one list per model
  (a pattern's rates link to it with that pattern chosen in its filter); the rate at ID i is
  the share of those shown that mention i, which the list page counts.

>>> lists = Lists()
>>> url = lists.add("t", ("m",), "Acc", "m: all", pd.DataFrame({"key": ["b", "a"]}))
>>> lists.cells["t"][("m",)]["Acc"] == url, lists.lists[url[6:]].keys
(True, ['a', 'b'])

Exercised by ``pytest tests/test_html_report.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pandas as pd

from mip.config.budgets import slug as budget_slug

from mip.analysis import coverage, pairs, slices, stats
from mip.analysis.report import metric_tables, sections, variant_figures

#: The columns a list shows (the issue's: model, task, pattern, n, p, seed, order seed, verdict, answer).
LIST_COLUMNS = ["key", "model", "task", "pattern", "n", "p", "majority_label", "seed", "order_seed", "verdict",
                "invalid_kind", "answer"]


@dataclass
class CellList:
    name: str
    """The file under ``lists/``."""
    title: str
    value: str
    """The number the list stands behind, as the table shows it (filled in by the writer)."""
    keys: list[str]
    mention: bool = False
    """A mention-rate list: its page counts the experiments that mention a chosen ID."""


@dataclass
class Lists:
    """Every cell list of a report, by table name → row values → column → list file."""

    cells: dict[str, dict[tuple, dict[str, str | dict[str, str]]]] = field(default_factory=dict)
    lists: dict[str, CellList] = field(default_factory=dict)
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The row key of a table whose key is not in :data:`mip.analysis.report.html.KEYS` (by its full name)."""

    def add(self, table: str, row: tuple, column: str, title: str, rows: pd.DataFrame, token: str | None = None,
            mention: bool = False) -> str:
        """Register the list of ``rows`` behind one cell (``token``: one pattern named in the cell)."""
        digest = hashlib.sha1(repr((table, row, column, token)).encode()).hexdigest()[:12]
        name = f"{table[:40]}-{digest}.html".replace("/", "-")
        self.lists[name] = CellList(name, title, "", sorted(rows["key"].astype(str)), mention)
        slot = self.cells.setdefault(table, {}).setdefault(tuple(str(v) for v in row), {})
        if token is None:
            slot[column] = f"lists/{name}"
        else:
            slot.setdefault(column, {})[token] = f"lists/{name}"  # type: ignore[union-attr]
        return f"lists/{name}"

    def keys(self) -> set[str]:
        return {k for cell in self.lists.values() for k in cell.keys}


def table2(lists: Lists, group: pd.DataFrame, tag: str) -> None:
    name = f"table2_{tag}"
    for row, sub in slices.of(group, sections.ROW):
        key = (row["model"], row["budget"], row["pool"])
        where = f"{row['model']} · budget {row['budget']} · {row['pool']} pool · {tag}"
        everything = lists.add(name, key, "Experiments", f"Table 2, {where}: every experiment", sub)
        for column in ["Invalid (%)", "Sets", *(f"Acc{m.suffix} (%)" for m in stats.METRICS.values())]:
            lists.cells[name][tuple(map(str, key))][column] = everything
        for metric, m in stats.METRICS.items():
            gap = stats.best_worst_gap(sub, metric)
            if gap.best and gap.worst:
                lists.add(name, key, f"Δ{m.suffix} (pp)", f"Table 2, {where}: Δ{m.suffix} = {gap.best} − {gap.worst}, "
                          "their matched experiments in the paired seeds", gap.paired())
            if metric == "valid_only":
                for pattern in {*gap.best_tied, *gap.worst_tied}:
                    lists.add(name, key, "π⁺ / π⁻", f"Table 2, {where}: pattern {pattern}",
                              sub[sub["pattern"] == pattern], token=pattern)


def model_rows(lists: Lists, name: str, group: pd.DataFrame, by: list[str], where: str) -> None:
    """The numbers of a :func:`mip.analysis.report.sections.model_rows` table (its raw columns):
    accuracies, invalid rate and counts on the row's experiments, each Δ on its paired π⁺ and π⁻."""
    for row, sub in slices.of(group, by):
        key = tuple(row[c] for c in by)
        label = f"{' · '.join(map(str, key))} ({where})"
        everything = lists.add(name, key, "experiments", f"{label}: every experiment", sub)
        for column in ("valid", "sets", "invalid_rate", "invalid_rate_sd",
                       *(f"acc{m.suffix}{sd}" for m in stats.METRICS.values() for sd in ("", "_sd"))):
            lists.cells[name][tuple(map(str, key))][column] = everything
        for metric, m in stats.METRICS.items():
            gap = stats.best_worst_gap(sub, metric)
            if gap.best and gap.worst:
                url = lists.add(name, key, f"delta{m.suffix}", f"{label}: Δ{m.suffix} = {gap.best} − {gap.worst}, their "
                                "experiments in the paired seeds", gap.paired())
                lists.cells[name][tuple(map(str, key))][f"delta{m.suffix}_sd"] = url


def patterns(lists: Lists, group: pd.DataFrame, tag: str) -> None:
    rows = sections._rows(group)  # the row labels the table shows
    for (model, pattern), sub in rows.groupby(["model", "pattern"]):
        key = (model, pattern)
        url = lists.add(f"patterns_by_model_{tag}", key, "acc_mean", f"Accuracy of {model} under {pattern}, {tag}", sub)
        for column in ("acc_sd", "seeds", "valid", "experiments"):
            lists.cells[f"patterns_by_model_{tag}"][tuple(map(str, key))][column] = url


def coverage_bins(lists: Lists, name: str, group: pd.DataFrame, traced: pd.DataFrame, by: list[str], where: str) -> None:
    """Table 3 / Table 7 (:func:`mip.analysis.coverage.coverage_table` by ``by``): each bin's
    numbers on the row's valid experiments in that bin (an empty bin: an empty list)."""
    lists.columns[name] = (*by, "bin")
    valid = group[group["valid"]]
    bins = pd.Series(coverage.NO_TRACE, index=valid.index, dtype=object)
    bins[traced.index] = traced["bin"].astype(str)
    for row, sub in slices.of(valid.assign(bin=bins), by):
        for label in (*coverage.BINS, coverage.NO_TRACE):
            key = (*(row[c] for c in by), label)
            url = lists.add(name, key, "experiments", f"{' · '.join(map(str, key[:-1]))}: coverage bin {label}, {where}",
                            sub[sub["bin"] == label])
            for column in ("share", "accuracy"):
                lists.cells[name][tuple(map(str, key))][column] = url


def mention_rates(lists: Lists, traced: pd.DataFrame, tag: str) -> None:
    for (budget, pool), sub in traced.groupby(["budget", "pool"]):
        name = f"mention_rates_{tag}_{budget_slug(budget)}_{pool}"
        for model, rows in sub.groupby("model"):
            # One list per model: a pattern's rates (Fig. 21) are its rows, which the list's pattern filter shows.
            url = lists.add(name, (model, coverage.POOLED), "experiments", f"Mention rates of {model}, budget {budget}, "
                            f"{pool} pool, {tag}: valid experiments with a trace", rows, mention=True)
            for pattern in rows["pattern"].unique():
                lists.cells[name][(str(model), str(pattern))] = {"experiments": f"{url}#pattern={pattern}"}


def core(lists: Lists, frame: pd.DataFrame) -> pd.DataFrame:
    """The lists behind the core section's tables (:func:`mip.analysis.report.sections.core`);
    returns the traced experiments (:func:`mip.analysis.coverage.with_coverage`) with their mentioned IDs."""
    scanned = []
    for setting, group in slices.of(frame, ["n", "p"]):
        tag = slices.file_tag(setting, ["n", "p"])
        table2(lists, group, tag)
        model_rows(lists, f"table2_numbers_{tag}", group, sections.ROW, tag)
        patterns(lists, group, tag)
        traced = coverage.with_coverage(group)
        coverage_bins(lists, f"table3_coverage_{tag}", group, traced, sections.ROW, f"Table 3, {tag}")
        mention_rates(lists, traced, tag)
        pools(lists, group, tag)
        scanned.append(traced[["key", "mentioned_ids"]])
    return pd.concat(scanned) if scanned else pd.DataFrame(columns=["key", "mentioned_ids"])


def side_by_side(lists: Lists, name: str, frame: pd.DataFrame, column: str, order: list[str], where: str) -> None:
    """A :func:`mip.analysis.report.metric_tables.side_by_side` table (rows model × metric): each
    value of ``column`` opens the model's experiments at that value, each change from the first
    value those of both values compared."""
    lists.columns[name] = ("model", "metric")
    for model, group in frame.groupby("model"):
        shown = group[column].astype(str)
        urls = {value: lists.add(name, (model, value), "experiments", f"{model} at {column} {value} ({where}): the "
                                 f"matched experiments of the {column}s compared", group[shown == value])
                for value in order if (shown == value).any()}
        urls |= {f"{value} − {order[0]}": lists.add(name, (model, value), "change", f"{model}, {column} {value} against "
                                                   f"{order[0]} ({where}): the matched experiments of both",
                                                   group[shown.isin([order[0], value])])
                 for value in order[1:] if value in urls and order[0] in urls}
        for _, _, label in metric_tables.side_by_side_metrics():
            lists.cells[name].setdefault((str(model), label), {}).update(urls)


def pools(lists: Lists, group: pd.DataFrame, tag: str) -> None:
    """The pool comparison (:func:`mip.analysis.report.sections.pools`) on the experiments it
    compares, each row (``model · budget``) per pool."""
    both, rows, order = sections.pool_rows(group)
    if both is not None and not both.empty:
        side_by_side(lists, f"pools_{tag}", rows, "pool", order, tag)


def budgets(lists: Lists, frame: pd.DataFrame) -> None:
    """The budget comparison's tables (:func:`mip.analysis.report.compared.budgets`), on the
    experiments they are computed from: those both budgets of each pair hold. In the side-by-side
    table each budget's column of a model's rows opens that model's experiments at that budget;
    Table 7's bins (coverage by budget) the valid experiments of the model and budget in the bin."""
    for setting, group in slices.of(frame, ["n", "p", "pool"]):
        for suffix, _, both in slices.budget_pairs(group):
            tag = slices.file_tag(setting, ["n", "p", "pool"]) + suffix
            if both.empty:
                continue
            model_rows(lists, f"budgets_numbers_{tag}", both.frame, ["model", "budget"], tag)
            side_by_side(lists, f"budgets_{tag}", both.frame, "budget", slices.budget_order(both.frame["budget"]), tag)
            coverage_bins(lists, f"table7_coverage_by_budget_{tag}", both.frame, coverage.with_coverage(both.frame),
                          ["model", "budget"], f"Table 7, {tag}")


def prompt_variants(lists: Lists, frame: pd.DataFrame) -> None:
    """Table 5 (:func:`mip.analysis.report.compared.prompt_variants`), on the experiments every
    variant of a model holds; each prompt-variant Δ (``prompt_variant_deltas_*``) on the matched
    pairs of that variant and the standard prompt (:func:`mip.analysis.pairs.against`)."""
    for setting, group in slices.of(frame, ["n", "p", "pool"]):
        tag = slices.file_tag(setting, ["n", "p", "pool"])
        for suffix, _, every in pairs.variant_sets(group):
            if not every.empty:
                model_rows(lists, f"table5_prompt_variants_{tag}{suffix}", every.frame, ["model", "prompt_variant", "budget"],
                           tag)
        for budget, sub in group.groupby("budget"):
            name = f"prompt_variant_deltas_{tag}_{budget_slug(budget)}"
            lists.columns[name] = ("model", "pattern", "prompt_variant")
            for variant, both in pairs.against(sub, "prompt_variant", "standard").items():
                shown = both.frame.assign(prompt_variant=variant)  # the row's variant: its own and the standard's
                everything = shown.assign(pattern=variant_figures.OVERALL)
                for key, rows in pd.concat([shown, everything]).groupby(["model", "pattern", "prompt_variant"]):
                    url = lists.add(name, key, "matched", f"{' · '.join(map(str, key))} against the standard prompt, "
                                    f"budget {budget} ({tag}): the matched pairs", rows)
                    for column in ("delta_mean", "delta_sd", "seeds"):
                        lists.cells[name][tuple(map(str, key))][column] = url
