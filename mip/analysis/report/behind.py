"""Which experiments stand behind each row of the report's table shapes (:mod:`mip.analysis.report.cells`).

A section calls these beside the table they describe, on the records it computed the table from:

- a :func:`mip.analysis.report.sections.model_rows` table (Table 2's numbers, budgets, Table 5,
  strategies, expanded orderings): each accuracy, the invalid rate and the counts rest on the row's
  experiments; each Δ on π⁺ and π⁻ in the seeds paired for it (:meth:`mip.analysis.stats.Gap.paired`,
  among the experiments every pattern holds, :func:`mip.analysis.pairs.patterns`);
- Table 2 (:func:`table2`): the same, by its printed columns, and each pattern named in π⁺ / π⁻ on
  that pattern's experiments;
- coverage bins (Tables 3, 7): each bin's valid experiments of the row (``no trace``: those without one);
- side-by-side comparisons (pools, budgets): each condition's column on the model's matched
  experiments under it, each change on those of both conditions compared;
- mention rates (Figs. 5, 21): the model's valid experiments with a trace, one list per model that
  each pattern's row and each ID's rate open with that pattern and ID chosen;
- a figure's numbers (:func:`numbers`): each row's experiments among those the figure plots; Fig. 14's
  (:func:`error_kinds`) the slice's experiments of each kind.

>>> rows = pd.DataFrame({"model": ["m", "m"], "pattern": ["majority_first", "random"], "valid": [True, True],
...                      "correct": [True, False], "seed": [0, 0], "task": "t", "key": ["a", "b"]})
>>> links = side_by_side(pd.DataFrame({"model": ["m"]}), rows, "pattern", ["majority_first", "random"], "here")
>>> links[0]["random − majority_first"].keys
('a', 'b')
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mip.analysis import coverage, slices, stats
from mip.analysis.report import figures
from mip.analysis.report.cells import Experiments, Link, Links, aligned, grouped, groups

#: Mention-rate tables show the rate of every ID up to this n, else of the first and last ten.
ALL_IDS = 30
#: The columns of a :func:`mip.analysis.stats.accuracy` table.
ACCURACY = ("acc_mean", "acc_sd", "seeds", "valid", "experiments")
#: The columns of a model_rows table that every experiment of the row stands behind.
EVERY = ("experiments", "valid", "sets", "invalid_rate", "invalid_rate_sd",
         *(f"acc{m.suffix}{sd}" for m in stats.METRICS.values() for sd in ("", "_sd")))


def _delta(gap: stats.Gap, suffix: str, label: str) -> Experiments:
    return Experiments.of(f"{label}: Δ{suffix} = {gap.best} − {gap.worst}, their matched experiments in the paired "
                          "seeds", gap.paired())


def model_rows(shown: pd.DataFrame, group: pd.DataFrame, by: Sequence[str], where: str) -> Links:
    """The numbers of a model_rows table (its raw columns), per row of ``shown`` (keyed by ``by``);
    under ``π⁺ / π⁻`` each pattern π⁺ or π⁻ names, on that pattern's experiments (:func:`table2`)."""
    found = {}
    for row, sub in slices.of(group, list(by)):
        key = tuple(row[c] for c in by)
        label = f"{' · '.join(map(str, key))} ({where})"
        every = Experiments.of(f"{label}: every experiment", sub)
        links: dict[str, Link] = {c: every for c in EVERY}
        for metric, m in stats.METRICS.items():
            gap = stats.best_worst_gap(sub, metric)
            if gap.best and gap.worst:
                links[f"delta{m.suffix}"] = links[f"delta{m.suffix}_sd"] = _delta(gap, m.suffix, label)
            if metric == "valid_only":
                links["π⁺ / π⁻"] = {p: Experiments.of(f"{label}: pattern {p}", sub[sub["pattern"] == p])
                                    for p in sorted({*gap.best_tied, *gap.worst_tied})}
        found[key] = links
    return aligned(shown, by, found)


def table2(links: Links) -> Links:
    """Table 2's links (:func:`mip.analysis.report.metric_tables.table2`) from its numbers' (:func:`model_rows`)."""
    printed = {"Experiments": "experiments", "Invalid (%)": "invalid_rate", "Sets": "sets", "π⁺ / π⁻": "π⁺ / π⁻",
               **{f"Acc{m.suffix} (%)": f"acc{m.suffix}" for m in stats.METRICS.values()},
               **{f"Δ{m.suffix} (pp)": f"delta{m.suffix}" for m in stats.METRICS.values()}}
    return tuple({column: row[raw] for column, raw in printed.items() if raw in row} for row in links)


def coverage_bins(shown: pd.DataFrame, group: pd.DataFrame, traced: pd.DataFrame, by: Sequence[str],
                  where: str) -> Links:
    """A coverage table (:func:`mip.analysis.coverage.coverage_table` by ``by``, ``bin`` as text):
    each bin's numbers on the row's valid experiments in that bin (an empty bin: an empty list)."""
    valid = group[group["valid"]]
    bins = pd.Series(coverage.NO_TRACE, index=valid.index, dtype=object)
    bins[traced.index] = traced["bin"].astype(str)
    found = {}
    for row, sub in slices.of(valid.assign(bin=bins), list(by)):
        for label in (*coverage.BINS, coverage.NO_TRACE):
            key = (*(row[c] for c in by), label)
            every = Experiments.of(f"{' · '.join(map(str, key[:-1]))}: coverage bin {label}, {where}",
                                   sub[sub["bin"] == label])
            found[key] = {c: every for c in ("experiments", "share", "accuracy")}
    return aligned(shown, [*by, "bin"], found)


def side_by_side(shown: pd.DataFrame, frame: pd.DataFrame, column: str, order: list[str], where: str) -> Links:
    """A :func:`mip.analysis.report.metric_tables.side_by_side` table (rows model × metric): each
    value of ``column`` opens the model's experiments at that value, each change those of both."""
    found = {}
    for (model,), group in groups(frame, ["model"]):
        at = group[column].astype(str)
        links: dict[str, Link] = {
            value: Experiments.of(f"{model} at {column} {value} ({where}): the matched experiments of the {column}s "
                                  "compared", group[at == value]) for value in order if (at == value).any()}
        first = order[0]
        links |= {f"{value} − {first}": Experiments.of(f"{model}, {column} {value} against {first} ({where}): the "
                                                       "matched experiments of both", group[at.isin([first, value])])
                  for value in order[1:] if value in links and first in links}
        found[(model,)] = links
    return aligned(shown, ["model"], found)


def mention_rates(rates: pd.DataFrame, traced: pd.DataFrame, where: str) -> tuple[pd.DataFrame, Links] | None:
    """Figs. 5 and 21's numbers as a table (per model and pattern, the rate of each ID: every ID up
    to :data:`ALL_IDS`, else the first and last ten) and its links: each row to its model's valid
    experiments with a trace (one list per model, opened on the row's pattern), each rate to that
    list opened on its ID. None without a rate."""
    if rates.empty:
        return None
    n = int(rates["position"].max())
    ids = list(range(1, n + 1)) if n <= ALL_IDS else [*range(1, 11), *range(n - 9, n + 1)]
    lists = {model: Experiments.of(f"Mention rates of {model}, {where}: valid experiments with a trace", rows,
                                   mention=True) for (model,), rows in groups(traced, ["model"])}
    table, links = [], []
    for (model, pattern), group in rates.groupby(["model", "pattern"], sort=False):
        by = group.set_index("position")["rate"]
        table.append({"model": model, "pattern": pattern, "experiments": int(group["experiments"].iloc[0]),
                      **{f"ID {i}": round(float(by.get(i, float("nan"))), 4) for i in ids}})
        every = lists.get(model)
        if every is not None and pattern != coverage.POOLED:
            every = every.at(f"pattern={pattern}")
        links.append({} if every is None else {"experiments": every, **{f"ID {i}": every.at(f"id={i}") for i in ids}})
    return pd.DataFrame(table), tuple(links)


def numbers(table: pd.DataFrame, rows: pd.DataFrame, by: list[str], columns, what: str) -> tuple[pd.DataFrame, Links]:
    """A table of accuracies or counts by ``by`` as report.html shows it under its figure: its
    patterns as text, rounded, each of ``columns`` linked to the experiments of its row in ``rows``."""
    shown = table.reset_index(drop=True)
    shown = shown.assign(**{c: shown[c].astype(str) for c in ("pattern",) if c in shown}).round(4)
    return shown, grouped(shown, rows, by, columns, what)


def error_kinds(rows: pd.DataFrame, tag: str) -> tuple[pd.DataFrame, Links]:
    """Fig. 14's numbers: per slice and kind (:func:`mip.analysis.report.figures.error_kinds`), the
    experiments of that kind and their share of the slice's, each linked to those experiments (a
    kind no experiment has: unlinked)."""
    table, links = [], []
    for model, sub in rows.groupby("model", sort=False):
        for kind, mask in figures.error_kinds(sub).items():
            table.append({"model": model, "kind": getattr(kind, "value", kind), "experiments": int(mask.sum()),
                          "share": round(mask.mean(), 4)})
            every = Experiments.of(f"{model}: {kind} experiments ({tag})", sub[mask])
            links.append({"experiments": every, "share": every} if mask.any() else {})  # none: nothing to open
    return pd.DataFrame(table), tuple(links)
