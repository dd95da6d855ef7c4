"""The report as one structure: tables whose cells carry the experiments they were computed from.

A section computes a table and, from the same records in the same loop, which experiments stand
behind each of its cells; :class:`Table` holds both. report.md prints the table's values
(:mod:`mip.analysis.report.metric_tables`), report.html prints the same values with each linked
cell opening the list of its experiments (:mod:`mip.analysis.report.html`), and W&B logs the same
tables: a change to a section shows in every output at once.

>>> frame = pd.DataFrame({"model": ["m", "m", "n"], "key": ["b", "a", "c"]})
>>> shown = pd.DataFrame({"model": ["n", "m"], "experiments": [1, 2]})
>>> table = Table("t", shown, "how", grouped(shown, frame, ["model"], ["experiments"], "Experiments of"))
>>> cell = table.cell(1, "experiments")
>>> print(cell.value, cell.experiments.title, cell.experiments.keys)
2 Experiments of: m ('a', 'b')
>>> table.cell(0, "model").experiments is None
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Experiments:
    """The experiments one number was computed from: its list page's title and their record keys."""

    title: str
    keys: tuple[str, ...]
    mention: bool = False
    """A mention-rate list: its page counts the experiments that mention a chosen ID."""
    fragment: str = ""
    """What the list opens with chosen in its filters (``pattern=random&id=3``); one list, many views."""

    @classmethod
    def of(cls, title: str, rows: pd.DataFrame, mention: bool = False) -> "Experiments":
        return cls(title, tuple(sorted(rows["key"].astype(str))), mention)

    def at(self, fragment: str) -> "Experiments":
        """The same list, opened on ``fragment`` (appended to one it already has)."""
        return dataclasses.replace(self, fragment=f"{self.fragment}&{fragment}" if self.fragment else fragment)

    @property
    def page(self) -> "Experiments":
        """The list page itself, whatever view of it a cell opens."""
        return dataclasses.replace(self, fragment="")


#: What a cell links to: one list, or one list per word of the cell (π⁺ / π⁻ names patterns).
Link = Experiments | dict[str, Experiments]
#: Per row of a table (by position), each linked column's experiments.
Links = tuple[dict[str, Link], ...]


@dataclass(frozen=True)
class Cell:
    value: object
    experiments: Link | None = None


@dataclass
class Table:
    """A table as every output shows it: its values (``frame``) and, per row position, the
    experiments behind each linked cell (``links``; none: a table of no records, Table 4)."""

    name: str
    frame: pd.DataFrame
    how: str
    links: Links = ()

    def cell(self, row: int, column: str) -> Cell:
        linked = self.links[row] if row < len(self.links) else {}
        return Cell(self.frame[column].iloc[row], linked.get(column))

    def experiments(self) -> set[str]:
        """Every record key a cell of this table stands on."""
        return {k for row in self.links for link in row.values()
                for e in (link.values() if isinstance(link, dict) else [link]) for k in e.keys}


@dataclass
class Item:
    """One entry of a report section: a table, a data file (CSV only; ``table`` is what report.html
    shows of it, if anything), a figure (with the table of its numbers, if any) or a figure not drawn."""

    section: str
    kind: str
    """``table``, ``data``, ``figure`` or ``missing``."""
    paths: list[Path]
    how: str
    table: Table | None = None

    @property
    def name(self) -> str:
        return self.paths[0].stem


def _same(value) -> object:
    """A row key's value as a dictionary key: every missing value alike (NaN is not equal to itself)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else value


def _key(values: Iterable) -> tuple:
    return tuple(_same(v) for v in values)


def aligned(shown: pd.DataFrame, by: Sequence[str], found: dict[tuple, dict[str, Link]]) -> Links:
    """Links per row of ``shown`` from links per row key (the values of ``by`` in that row)."""
    found = {_key(k): v for k, v in found.items()}
    return tuple(found.get(_key(row), {}) for row in shown[list(by)].itertuples(index=False, name=None))


def groups(rows: pd.DataFrame, by: Sequence[str]) -> Iterable[tuple[tuple, pd.DataFrame]]:
    """``rows`` grouped by ``by`` as a table of them groups them (missing values a group of their own)."""
    for key, sub in rows.groupby(list(by), dropna=False, observed=True, sort=False):
        yield (key if isinstance(key, tuple) else (key,)), sub


def grouped(shown: pd.DataFrame, rows: pd.DataFrame, by: Sequence[str], columns: Iterable[str], what: str) -> Links:
    """Each row of ``shown`` (a table of ``rows`` grouped by ``by``) links ``columns`` to its group's experiments."""
    columns = tuple(columns)
    found = {}
    for key, sub in groups(rows, by):
        every = Experiments.of(f"{what}: {' · '.join(map(str, key))}", sub)
        found[key] = {c: every for c in columns}
    return aligned(shown, by, found)
