"""Parts of the report kept from one report to the next, each by its own key: a part (one section's
tables, figures and notes at one setting, :meth:`mip.analysis.report.Report.part`) whose records did
not change gives the new report what it gave the last one, without computing it again. One more job
then computes again only the parts its records reach.

Nothing stale can be kept: a part's key (:meth:`Parts.key`) digests its name, the report's choices
(``where``, ``core``, the trace pool), the code it is computed by
(:func:`mip.analysis.report.kept_figures.code_key`, :data:`PART_RULES`) and its records: each one's
row of the analysed table, in their order, every value of it digested once for the whole table (a
record rewritten under the same key, or a column derived from other records, changes it), the columns,
their types and the frame's ``attrs``. A part selects its records from the table and never edits one;
a frame of other columns is digested value by value. What a part gave is kept in ``.parts/<key>.pkl``
under the report's folder (hidden), written with the report beside its folder and swapped in with it
(:mod:`mip.analysis.report.swap`): an entry is named by its key, so none can disagree with it. A kept
figure is replayed undrawn; its own key (:mod:`mip.analysis.report.kept_figures`) finds the last
report's files, and where they are gone the part is computed again.

>>> import tempfile
>>> frame = pd.DataFrame({"key": ["a", "b"], "verdict": ["correct", "incorrect"], "reasoning": ["1 2", None]})
>>> root = Path(tempfile.mkdtemp())
>>> parts = Parts(None, root / "one", "code", "choices", frame)
>>> parts.value("count", frame, lambda: len(frame)), parts.computed
(2, ['count'])
>>> again = Parts(root / "one", root / "two", "code", "choices", frame)
>>> again.value("count", frame, lambda: 0), again.computed
(2, [])
>>> rewritten = frame.assign(verdict=["correct", "correct"])           # "b" stored again, another verdict
>>> again.key("n", frame) == Parts(None, root / "three", "code", "choices", rewritten).key("n", rewritten)
False
>>> again.key("n", frame) == again.key("n", frame.assign(model="m"))  # a column of its own: digested by value
False

Exercised by ``pytest tests/test_report_parts.py``.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mip.analysis.report.cells import Item

#: Raise to compute every part again (a change in what a part keeps that no code digest sees).
PART_RULES = 1
#: The hidden folder of a report that keeps its parts.
FOLDER = ".parts"


@dataclass
class Part:
    """What one part gave the report, in order: its entries (paths relative to the report's folder),
    the bytes of their table and data files, each figure's kept-figure key, its notes and the IDs
    its traced experiments mention."""

    entries: list[Item]
    files: dict[str, bytes]
    figures: dict[str, str]
    notes: list[str]
    mentioned: dict[str, list[int]]


@dataclass
class Made:
    """A part being computed: where its entries start and end in the report, its notes and mentions."""

    key: str
    start: int
    end: int = -1
    notes: list[str] = field(default_factory=list)
    mentioned: dict[str, list[int]] = field(default_factory=dict)


def _digests(frame: pd.DataFrame) -> pd.Series | None:
    """Each record of ``frame`` (a row of the analysed table) digested, every value of its row (uint64), by
    its key; None without a unique key."""
    if "key" not in frame.columns or not frame["key"].is_unique:
        return None
    return pd.Series(_hashed(frame), index=pd.Index(frame["key"]))


def _hashed(frame: pd.DataFrame):
    """Each row of ``frame`` as one uint64 of every value in it; a column of lists or dicts (a decomposed
    strategy's per-position errors) by each value's ``repr``."""
    columns = {}
    for i, (_, column) in enumerate(frame.items()):
        try:
            columns[i] = pd.util.hash_pandas_object(column, index=False, categorize=False).to_numpy()
        except (TypeError, ValueError):
            columns[i] = pd.util.hash_array(np.array([repr(v) for v in column], dtype=object), categorize=False)
    return pd.util.hash_pandas_object(pd.DataFrame(columns, index=range(len(frame))), index=False).to_numpy()


def _shape(frame: pd.DataFrame) -> str:
    return repr((list(frame.columns), [str(t) for t in frame.dtypes]))


class Parts:
    """The parts of the last report under ``old`` (None: none) and this report's, under ``folder``;
    ``code`` and ``choices`` (what the report was asked) are in every key. ``frame``: the records
    every part is a part of (each record's row is digested once)."""

    def __init__(self, old: Path | None, folder: Path, code: str, choices: str, frame: pd.DataFrame):
        self.old = Path(old) / FOLDER if old is not None else None
        self.folder = Path(folder) / FOLDER
        self.base = f"{PART_RULES} {code} {choices}"
        self.digests, self.shape = _digests(frame), _shape(frame)
        self.computed: list[str] = []
        """The parts this report computed (not kept), by name, in order."""
        self.made: list[Made] = []

    def key(self, name: str, records: pd.DataFrame | Sequence[pd.DataFrame | str | None]) -> str:
        """The digest of part ``name`` of ``records``: one frame, or what the part reads together (frames,
        and text it is handed beside them)."""
        digest = hashlib.blake2b(f"{self.base}\x1d{name}".encode(), digest_size=16)
        for read in [records] if isinstance(records, pd.DataFrame) else records:
            if not isinstance(read, pd.DataFrame):
                digest.update(f"\x1d{read!r}".encode("utf-8", "surrogatepass"))
                continue
            digest.update(repr((_shape(read), len(read), sorted(read.attrs.items(), key=str))).encode(
                "utf-8", "surrogatepass"))
            digest.update(self._rows(read))
        return digest.hexdigest()

    def _rows(self, frame: pd.DataFrame) -> bytes:
        """Each row of ``frame`` digested (uint64), in order. A frame of the analysed table's columns holds
        its records' rows (a part selects records, it never edits one): their digests were taken once;
        any other frame is digested value by value."""
        if self.digests is not None and _shape(frame) == self.shape:
            at = self.digests.index.get_indexer(frame["key"])
            if (at >= 0).all():
                return self.digests.to_numpy()[at].tobytes()
        return _hashed(frame).tobytes()

    def get(self, key: str):
        """The last report's value of ``key``; None where it kept none (or it cannot be read)."""
        if self.old is None:
            return None
        try:
            with open(self.old / f"{key}.pkl", "rb") as handle:
                return pickle.load(handle)  # a file this module wrote into the report's own hidden folder
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None

    def keep(self, key: str) -> None:
        """The last report's entry of ``key`` is this report's too (linked, not copied)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            os.link(self.old / f"{key}.pkl", self.folder / f"{key}.pkl")
        except FileExistsError:
            pass
        except OSError:
            shutil.copy2(self.old / f"{key}.pkl", self.folder / f"{key}.pkl")

    def put(self, key: str, value) -> None:
        """Keep ``value`` under ``key`` for the next report (written whole, then named)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f"{key}.tmp"
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, self.folder / f"{key}.pkl")

    def value(self, name: str, records: pd.DataFrame, compute: Callable[[], object]):
        """``compute()``, or the last report's value where ``records`` are unchanged (the headline's rows)."""
        key = self.key(name, records)
        kept = self.get(key)
        if kept is not None:
            self.keep(key)
            return kept[0]
        self.computed.append(name)
        value = compute()
        self.put(key, (value,))
        return value

    def replay(self, report, key: str) -> bool:
        """Give ``report`` what the last report's part ``key`` gave it, if that part is kept and each of its
        figures is (:meth:`mip.analysis.report.kept_figures.Kept.holds`); whether it did."""
        part = self.get(key)
        if not isinstance(part, Part) or report.kept is None:
            return False
        if not all(report.kept.holds(name, figure) for name, figure in part.figures.items()):
            return False
        for name, data in part.files.items():
            path = report.folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        for item in part.entries:
            if item.kind == "figure":
                report.kept.kept(item.name, part.figures[item.name])
                report.keys[item.name] = part.figures[item.name]
            report.entries.append(Item(item.section, item.kind, [report.folder / p for p in item.paths], item.how,
                                       item.table))
        report.notes += part.notes
        report.mentioned |= part.mentioned
        self.keep(key)
        return True

    def close(self, report) -> None:
        """Keep each part this report computed (after its figures are drawn), for the next report."""
        for made in self.made:
            part = _part(report, made)
            if part is not None:
                self.put(made.key, part)
        self.made = []


def _part(report, made: Made) -> Part | None:
    """What ``made`` gave ``report``, to keep; None where a figure of it cannot be kept (handed over drawn)."""
    entries, files, figures = [], {}, {}
    for item in report.entries[made.start:made.end]:
        if item.kind == "figure":
            if not report.keys.get(item.name):
                return None
            figures[item.name] = report.keys[item.name]
        elif item.kind in ("table", "data"):
            files |= {p.relative_to(report.folder).as_posix(): p.read_bytes() for p in item.paths}
        entries.append(Item(item.section, item.kind, [p.relative_to(report.folder) for p in item.paths], item.how,
                            item.table))
    return Part(entries, files, figures, made.notes, made.mentioned)
