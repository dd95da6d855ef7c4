"""The generalisability grid (Fig. 3, §4.2): a model's (n, p) cells compared on matched experiments.

A model run at more than one (n, p) cell, at one budget and pool, forms a grid; its cells are
compared only on the experiments every cell holds (:func:`mip.analysis.pairs.matched`), and a
cell so small that it would shrink the grid is set aside with a note (:func:`matched_grid`).

>>> standard = pd.DataFrame({"base_model": "m", "budget": "20k", "pool": "filtered", "n": [20, 20, 50],
...                          "p": 0.6, "task": ["a", "b", "a"], "seed": 1, "correct": True})
>>> notes = []
>>> matched_grid(standard, notes)["task"].tolist(), len(notes)
(['a', 'a'], 1)
"""

from __future__ import annotations

import pandas as pd

from mip.analysis import pairs


def matched_grid(standard: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Standard-prompt slices of models with more than one (n, p) cell at a budget and pool, on the
    experiments every cell of the grid holds (:func:`mip.analysis.pairs.matched`: the same task,
    label, selection and order seeds; §4.2 runs seed 1 only, and the core cell's other seeds and
    tasks would otherwise weigh it differently). What a cell holds beyond them is counted in a note."""
    if standard.empty:
        return standard
    cells = standard["n"].astype(str) + "/" + standard["p"].astype(str)
    several = cells.groupby([standard["base_model"], standard["budget"], standard["pool"]]).transform("nunique") > 1
    grid = standard[several]
    if grid.empty:
        return grid
    grid, aside = _stray_cells(grid)
    notes += aside
    order = [pairs.condition_label(["n", "p"], c) for c in sorted(set(zip(grid["n"], grid["p"])))]
    every = pairs.matched(grid, ["n", "p"], within=["base_model", "budget", "pool"], order=order)
    if int(every.counts["dropped"].sum()):
        notes.append("Generalisability grid: " + every.note() + " The dropped experiments stay in their own sections.")
    kept = every.frame.copy()
    kept.attrs["matched"] = every.note()  # said beside the section's tables (mip.analysis.report.sections)
    return kept


def _stray_cells(grid: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The grid less the cells that would shrink it: while setting aside a model's smallest (n, p)
    cell leaves more matched experiments per cell, it is set aside (a 2-experiment run at a new
    cell then costs only itself, not the grid's other cells), and the note says so."""
    keep, notes = pd.Series(True, index=grid.index), []
    for key, group in grid.groupby(["base_model", "budget", "pool"], sort=True):
        cells = group.groupby(["n", "p"]).size().sort_values(kind="stable")
        while len(cells) > 2:
            now = len(pairs.matched(group, ["n", "p"], within=()).frame) / len(cells)
            n, p = cells.index[0]
            rest = group[~((group["n"] == n) & (group["p"] == p))]
            if len(pairs.matched(rest, ["n", "p"], within=()).frame) / (len(cells) - 1) <= now:
                break
            keep[group.index.difference(rest.index)] = False
            notes.append(f"Generalisability grid of {' · '.join(map(str, key))}: the cell (n={n}, p={p:g}) holds "
                         f"{int(cells.iloc[0])} experiment(s), fewer than the other cells share; it is compared on "
                         "its own section only, not matched into the grid.")
            group, cells = rest, cells.iloc[1:]
    return grid[keep], notes
