"""Figures kept from one report to the next: when nothing a figure is drawn from changed, the last
report's PNG and PDF are kept (linked into the new report, :mod:`mip.analysis.report.swap`) instead
of being encoded again, which is most of a report's time.

Nothing stale can be kept: the key (:func:`key`) digests everything the figures are made from: the
analysed frame (every row and column, after ``where``), the report's options (core setting, trace
pool), the code of the whole ``mip`` package, matplotlib's version and :data:`FIGURE_RULES`. Any
change to one of these draws every figure again; ``figures/.index.json`` keeps the key and the
figures it vouches for (hidden: no reader of the folder takes it for a figure).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()) / "figures"
>>> Kept(folder, "k1").kept("fig2"), Kept(folder, "k1").close()
(False, None)

Exercised by ``pytest tests/test_report_scale.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import matplotlib
import pandas as pd

from mip.analysis.results import TEXT_COLUMNS

#: Raise to draw every figure again (a change in how figures look that no code digest sees).
FIGURE_RULES = 1
#: The package whose code the figures are made by: any change in it draws every figure again.
PACKAGE = Path(__file__).resolve().parents[2]


def key(frame: pd.DataFrame, *options: object) -> str:
    """The digest of what the report's figures are drawn from: ``frame``, ``options`` (by ``repr``),
    the package's code, matplotlib's version and :data:`FIGURE_RULES`.

    >>> a = pd.DataFrame({"x": [1, 2]})
    >>> key(a, 1) == key(a.copy(), 1), key(a, 1) == key(a, 2), key(a, 1) == key(a.assign(x=[1, 3]), 1)
    (True, False, False)
    >>> t = pd.DataFrame({"reasoning": ["a", None]})   # traces are hashed as they are, not as CSV
    >>> key(t) == key(t.assign(reasoning=["b", None])), key(t) == key(t.assign(reasoning=["a", "a"]))
    (False, False)
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{FIGURE_RULES} {matplotlib.__version__} {options!r}".encode())
    digest.update(repr(list(frame.columns)).encode())
    texts = [c for c in TEXT_COLUMNS if c in frame.columns]
    digest.update(frame.drop(columns=texts).to_csv(index=True).encode())  # every value as written: lists, dicts
    for column in texts:  # traces run to 100 KB a record: fed as they are, not copied into one CSV text
        for value in frame[column]:
            digest.update(b"\x00" if value is None or value != value else str(value).encode("utf-8", "surrogatepass"))
            digest.update(b"\x1e")
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Kept:
    """The figures under ``folder`` (linked from the last report): kept when the last report's key is
    ``key``, else removed, all of them, before any is drawn."""

    def __init__(self, folder: Path, key: str):
        self.folder, self.index, self.key = folder, folder / ".index.json", key
        try:
            old = json.loads(self.index.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        if old.get("key") != key:  # removed, not overwritten: a link's file is also the last report's
            shutil.rmtree(folder, ignore_errors=True)
            old = {}
        self.old: set[str] = set(old.get("figures", []))
        self.new: set[str] = set()
        self.index.unlink(missing_ok=True)

    def paths(self, name: str) -> list[Path]:
        return [self.folder / f"{name}.png", self.folder / f"{name}.pdf"]

    def kept(self, name: str) -> bool:
        """Whether the last report's ``name`` is kept (then it is not drawn); either way it is in this report."""
        self.new.add(name)
        return name in self.old and all(p.is_file() for p in self.paths(name))

    def close(self) -> None:
        """Remove the figures this report does not show; write the index of those it does."""
        for name in self.old - self.new:
            for path in self.paths(name):
                path.unlink(missing_ok=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.index.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": self.key, "figures": sorted(self.new)}), encoding="utf-8")
        os.replace(tmp, self.index)
