"""report.html's list pages: ``lists/<cell>.html``, one per set of experiments a cell was computed
from, each row a record (its fields, verdict and answer, the IDs it mentions, the link to its page),
with offline search, filters and sorting (``assets/report.js``).

A list page is written again only when what it shows changed: its :func:`digest` covers its title,
value and rows as shown, and :class:`mip.analysis.report.kept_pages.KeptLists` keeps the digests
from one report to the next, so a rerun after one more job writes the lists that hold its records.

>>> text(0.12345), text(float("nan")), ranges({1, 2, 3, 7, 9, 10})
('0.1235', '–', '1-3 7 9-10')

Exercised by ``pytest tests/test_report_scale.py`` and ``tests/test_html_report.py``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import pandas as pd

from mip.analysis.report.kept_pages import KeptLists

TEMPLATES = Path(__file__).parent / "templates"
#: The columns a list shows (model, task, pattern, n, p, seed, order seed, verdict, answer).
LIST_COLUMNS = ["key", "model", "task", "pattern", "n", "p", "majority_label", "seed", "order_seed", "verdict",
                "invalid_kind", "answer"]
#: The list's filters: (column, label).
FILTERS = [("verdict", "verdict"), ("pattern", "pattern"), ("task", "task"), ("seed", "seed")]


def text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def ranges(ids) -> str:
    """``1-3 7 9-10``: a set of IDs as the list pages' filter reads it."""
    out, run = [], []
    for i in sorted(ids):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return " ".join(out)


def _rows(cell, rows: "ListRows") -> list[dict]:
    """A list's rows; a mention-rate list's carry their mentioned IDs (as ranges) for its ID count."""
    return [{**rows.of(key), "ids": rows.ids(key) if cell.mention else ""} for key in cell.keys]


@dataclass
class ListRows:
    """Each listed record's row as the list pages show it, made once however many lists hold it."""

    info: pd.DataFrame
    """The report's records by key."""
    mentioned: dict[str, list[int]]
    written: dict[str, str]
    made: dict[str, dict] = field(default_factory=dict)
    digests: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self):
        self.at = {key: i for i, key in enumerate(self.info.index)}
        self.columns = {c: self.info[c].tolist() for c in LIST_COLUMNS if c != "key"}

    def of(self, key: str) -> dict:
        if key not in self.made:
            i, ids = self.at[key], self.mentioned.get(key)
            kind = self.columns["invalid_kind"][i]
            self.made[key] = {**{c: text(v[i]) for c, v in self.columns.items()}, "key": key,
                              "invalid_kind": kind if isinstance(kind, str) else "",
                              "mentioned": "–" if ids is None else len(ids),
                              "href": f"../{self.written[key]}" if key in self.written else None}
        return self.made[key]

    def ids(self, key: str) -> str:
        ids = self.mentioned.get(key)
        return ranges(ids) if ids else ""

    def digest(self, key: str) -> bytes:
        """What the row of ``key`` shows, as a digest (its IDs too, which a mention-rate list shows)."""
        if key not in self.digests:
            shown = repr((sorted(self.of(key).items()), self.mentioned.get(key)))
            self.digests[key] = hashlib.blake2b(shown.encode(), digest_size=8).digest()
        return self.digests[key]


def digest(cell, rows: ListRows) -> str:
    """What the list page of ``cell`` shows, as a digest: its name, title, value, kind, and each row's
    (:meth:`ListRows.digest`), in order; the page is written again only when this changes.

    >>> from mip.analysis.report.html import CellList, Experiments
    >>> rows = ListRows(pd.DataFrame({c: ["x"] for c in LIST_COLUMNS}).set_index("key"), {}, {})
    >>> cells = [CellList("t.html", Experiments("title", ("x",)), value) for value in ("v = 1", "v = 1", "v = 2")]
    >>> [digest(cell, rows) == digest(cells[0], rows) for cell in cells]
    [True, True, False]
    """
    out = hashlib.blake2b(repr((cell.name, cell.title, cell.value, cell.mention)).encode(), digest_size=12)
    out.update(b"".join(key.encode() + rows.digest(key) for key in cell.keys))
    return out.hexdigest()


def write(env: jinja2.Environment, folder: Path, cells: Iterable, rows: ListRows) -> int:
    """A page per cell's list (:class:`mip.analysis.report.html.CellList`) under ``folder``; one whose
    digest (:func:`digest`) is the last report's is kept, and lists of cells no longer in the report
    are removed. Return the number of pages written."""
    kept = KeptLists(folder, [TEMPLATES / "list.html.j2", Path(__file__)])
    listing = env.get_template("list.html.j2")
    for cell in cells:
        if not kept.kept(cell.name, digest(cell, rows)):
            kept.write(cell.name, listing.render(cell=cell, filters=FILTERS, rows=_rows(cell, rows)))
    kept.close()
    return kept.written
