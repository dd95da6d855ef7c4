"""Which experiments the numbers of the report's other sections were computed from.

:mod:`mip.analysis.report.cell_lists` lists the core section's Table 2, Table 3, mention rates,
budgets and Table 5; this module the rest, each table keyed by the columns it shows (recorded in
:attr:`mip.analysis.report.cell_lists.Lists.columns`, so the HTML writer finds each row's lists):

- the interval tables (``intervals_and_tests_*``, :func:`mip.analysis.report.sections.intervals`):
  ``sets`` and the accuracy interval on the row's experiments; the Δ interval on the experiments
  of π⁺ and π⁻ it resamples; ``test``, ``pairs`` and ``p_value`` on the valid experiments of π⁺
  and π⁻ in the instance sets that hold both (``pairs`` of them);
- the generalisability cells (``generalisability_cells_*``): each (n, p) cell's experiments of a
  model and pattern, among the matched ones the grid holds (:func:`mip.analysis.slices.sections`);
- the strategies table (per slice, like Table 2's numbers) and the comparison with the single
  call (``cost_and_tokens``, ``count_errors``, ``decomposed_instances``): the experiments each
  strategy and the single call both hold (:func:`mip.analysis.pairs.matched`, as
  :func:`mip.analysis.report.strategy_section.compared` takes them);
- the expanded orderings (per slice, and per slice and pattern).

Exercised by ``pytest tests/test_html_links.py``.
"""

from __future__ import annotations

import pandas as pd

from mip.analysis import pairs, slices, stats
from mip.analysis.report import cell_lists, sections, strategy_section
from mip.analysis.report.cell_lists import Lists

#: The columns of a :func:`mip.analysis.stats.accuracy` table.
ACCURACY = ("acc_mean", "acc_sd", "seeds", "valid", "experiments")


def grouped(lists: Lists, name: str, frame: pd.DataFrame, by: list[str], columns, what: str) -> None:
    """One list per group of ``frame`` by ``by`` (the table's row key), linked from each of ``columns``."""
    lists.columns[name] = tuple(by)
    for key, sub in frame.groupby(by, dropna=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        url = lists.add(name, key, "experiments", f"{what}: {' · '.join(map(str, key))}", sub)
        for column in columns:
            lists.cells[name][tuple(map(str, key))][column] = url


def paired_sets(sub: pd.DataFrame, best: str, worst: str) -> pd.DataFrame:
    """The valid experiments of ``best`` and ``worst`` in the matched experiments holding a valid
    one of each: the pairs :func:`mip.analysis.inference.paired_test` compares (one rule,
    :func:`mip.analysis.pairs.valid_pairs`).

    >>> rows = [{"model": "m", "task": "t", "seed": seed, "pattern": pattern, "valid": True}
    ...         for seed, pattern in [(0, "majority_first"), (0, "majority_last"), (1, "majority_first")]]
    >>> paired_sets(pd.DataFrame(rows), "majority_first", "majority_last")[["seed", "pattern"]].values.tolist()
    [[0, 'majority_first'], [0, 'majority_last']]
    """
    return pairs.valid_pairs(sub, best, worst)


def intervals(lists: Lists, frame: pd.DataFrame) -> None:
    """The interval tables of each core setting (:func:`mip.analysis.report.sections.core`)."""
    for setting, group in slices.of(frame, ["n", "p"]):
        _intervals(lists, group, slices.file_tag(setting, ["n", "p"]))


def _intervals(lists: Lists, group: pd.DataFrame, tag: str) -> None:
    name = f"intervals_and_tests_{tag}"
    lists.columns[name] = tuple(sections.ROW)
    for row, sub in slices.of(group, sections.ROW):
        key = tuple(row[c] for c in sections.ROW)
        where = f"{' · '.join(map(str, key))} ({tag})"
        url = lists.add(name, key, "sets", f"Intervals, {where}: every experiment", sub)
        for column in ("acc_ci_low", "acc_ci_high"):
            lists.cells[name][tuple(map(str, key))][column] = url
        gap = stats.best_worst_gap(sub)
        if not (gap.best and gap.worst and gap.best != gap.worst):
            continue
        url = lists.add(name, key, "delta_ci_low", f"Intervals, {where}: the Δ interval's experiments ({gap.best} and "
                        f"{gap.worst}, every instance set)", sub[sub["pattern"].isin([gap.best, gap.worst])])
        lists.cells[name][tuple(map(str, key))]["delta_ci_high"] = url
        url = lists.add(name, key, "pairs", f"Intervals, {where}: the paired test's experiments ({gap.best} against "
                        f"{gap.worst}, valid, in the instance sets holding both)", paired_sets(sub, gap.best, gap.worst))
        for column in ("test", "p_value"):
            lists.cells[name][tuple(map(str, key))][column] = url


def generalisability(lists: Lists, frame: pd.DataFrame) -> None:
    for setting, group in slices.of(frame, ["budget", "pool"]):
        tag = slices.file_tag(setting, ["budget", "pool"])
        grouped(lists, f"generalisability_cells_{tag}", group, ["model", "pattern", "n", "p"], ACCURACY,
                f"Generalisability, {slices.label(setting, ['budget', 'pool'])}, the matched experiments of cell")


def strategies(lists: Lists, frame: pd.DataFrame, baseline: pd.DataFrame | None) -> None:
    if frame.empty:
        return
    lists.columns["strategies"] = tuple(slices.SLICE)
    cell_lists.model_rows(lists, "strategies", frame, slices.SLICE, "strategies")
    compared, _ = strategy_section.compared(frame, baseline)
    keys = strategy_section.slice_keys(compared)
    what = "matched with the single call"
    grouped(lists, "cost_and_tokens", compared, keys, strategy_section.COST_COLUMNS, f"Cost and tokens ({what})")
    counted = compared.dropna(subset=["count_error_majority"])
    if not counted.empty:
        grouped(lists, "count_errors", counted, [*keys, "pattern"], ("experiments", "mean error", "sd", "mean |error|"),
                f"Count errors ({what})")
    decomposed = compared.dropna(subset=["instance_accuracy"])
    if not decomposed.empty:
        grouped(lists, "decomposed_instances", decomposed, [*keys, "pattern"],
                ("experiments", "instance accuracy", "missing share"), f"Decomposed instances ({what})")


def expanded(lists: Lists, frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    lists.columns["expanded_orderings"] = tuple(slices.SLICE)
    cell_lists.model_rows(lists, "expanded_orderings", frame, slices.SLICE, "expanded orderings")
    grouped(lists, "expanded_orderings_patterns", frame, [*slices.SLICE, "pattern"], ACCURACY,
            "Expanded orderings, accuracy per pattern")
