"""Figures kept from one report to the next, each by its own key: a figure whose drawn data did not
change keeps the last report's PNG and PDF (linked into the new report, :mod:`mip.analysis.report.swap`)
instead of being drawn and encoded again, which is most of a report's time. One more job then draws
again only the figures its records reach.

Nothing stale can be kept: a figure's key (:func:`key`) digests what it is drawn from (its draw
function and every argument handed to it, :class:`mip.analysis.report.figures.Later`) and the code it
is drawn by (:func:`code_key`: the whole ``mip`` package, matplotlib's version and
:data:`FIGURE_RULES`). ``figures/.index.json`` keeps each figure's key (hidden: no reader of the
folder takes it for a figure).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()) / "figures"
>>> Kept(folder, "code").kept("fig2", "k1"), Kept(folder, "code").close()
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
import numpy as np
import pandas as pd

from mip.analysis.results import TEXT_COLUMNS

#: Raise to draw every figure again (a change in how figures look that no code digest sees).
FIGURE_RULES = 2
#: The package whose code the figures are made by: any change in it draws every figure again.
PACKAGE = Path(__file__).resolve().parents[2]


def code_key() -> str:
    """The digest of what draws the figures: the package's code, matplotlib's version and :data:`FIGURE_RULES`."""
    digest = hashlib.blake2b(f"{FIGURE_RULES} {matplotlib.__version__}".encode(), digest_size=16)
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def key(code: str, draw, args: tuple, kwargs: dict) -> str:
    """The digest of one figure: ``code`` (:func:`code_key`), its draw function and its arguments.

    >>> a = pd.DataFrame({"x": [1, 2]})
    >>> k = lambda *args, **kw: key("c", len, args, kw)
    >>> k(a, 1) == k(a.copy(), 1), k(a, 1) == k(a, 2), k(a, 1) == k(a.assign(x=[1, 3]), 1), k(a) == k(a, t=None)
    (True, False, False, False)
    >>> k(a.iloc[[1]]) == k(a.iloc[[1]].set_axis([5])), k(a.iloc[[1]]) == k(a.iloc[[0]])  # rows, not where they sat
    (True, False)
    >>> t = pd.DataFrame({"reasoning": ["a", None]})   # traces are hashed as they are, not as CSV
    >>> k(t) == k(t.assign(reasoning=["b", None])), k(t) == k(t.assign(reasoning=["a", "a"]))
    (False, False)
    """
    digest = hashlib.blake2b(f"{code} {draw.__module__}.{draw.__qualname__}".encode(), digest_size=16)
    for name, value in [*enumerate(args), *sorted(kwargs.items())]:
        digest.update(f"\x1d{name}=".encode())
        _feed(digest, value)
    return digest.hexdigest()


def _feed(digest, value) -> None:
    """``value`` into ``digest``: a frame by its index, columns, dtypes and every value; anything else by ``repr``."""
    if isinstance(value, pd.Series):
        value = value.to_frame()
    if isinstance(value, np.ndarray):
        value = pd.DataFrame(value)
    if not isinstance(value, pd.DataFrame):
        digest.update(repr(value).encode("utf-8", "surrogatepass"))
        return
    digest.update(repr((list(value.columns), value.columns.names, value.index.names, list(value.dtypes))).encode())
    texts = [c for c in TEXT_COLUMNS if c in value.columns]
    index = not _positions(value.index)
    digest.update(value.drop(columns=texts).to_csv(index=index).encode())  # every value as written: lists, dicts
    for column in texts:  # traces run to 100 KB a record: fed as they are, not copied into one CSV text
        for text in value[column]:
            digest.update(b"\x00" if text is None or text != text else str(text).encode("utf-8", "surrogatepass"))
            digest.update(b"\x1e")


def _positions(index: pd.Index) -> bool:
    """Whether ``index`` only says where the rows sat in the analysed frame (unnamed integers): no figure
    draws that, and one more job's records read before them would move them all.

    >>> _positions(pd.Index([3, 7])), _positions(pd.RangeIndex(2)), _positions(pd.Index([3, 7], name="n"))
    (True, True, False)
    """
    return index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index.dtype)


class Kept:
    """The figures under ``folder`` (linked from the last report), each kept where its key is the last
    report's; the others are removed before they are drawn again. ``code`` (:func:`code_key`) is
    written into each key by :meth:`key`."""

    def __init__(self, folder: Path, code: str):
        self.folder, self.index, self.code = folder, folder / ".index.json", code
        try:
            old = json.loads(self.index.read_text(encoding="utf-8"))["figures"]
            assert isinstance(old, dict)
        except (OSError, ValueError, KeyError, TypeError, AssertionError):  # none, or an older index: nothing kept
            shutil.rmtree(folder, ignore_errors=True)
            old = {}
        self.old: dict[str, str] = old
        self.new: dict[str, str] = {}
        self.drawn: list[str] = []
        """The figures this report draws and encodes (not kept), in the order they were handed over."""
        self.index.unlink(missing_ok=True)

    def key(self, draw, args: tuple, kwargs: dict) -> str:
        return key(self.code, draw, args, kwargs)

    def paths(self, name: str) -> list[Path]:
        return [self.folder / f"{name}.png", self.folder / f"{name}.pdf"]

    def holds(self, name: str, key: str) -> bool:
        """Whether the last report's ``name`` was drawn under ``key`` and is still on disk (asking changes nothing)."""
        return self.old.get(name) == key and all(p.is_file() for p in self.paths(name))

    def kept(self, name: str, key: str | None) -> bool:
        """Whether the last report's ``name`` is kept (then it is not drawn); either way it is in this
        report. A figure not kept is removed (a link's file is also the last report's: never overwritten);
        one without a ``key`` (handed over drawn) is never kept.

        >>> import tempfile
        >>> kept = Kept(Path(tempfile.mkdtemp()), "code")
        >>> kept.kept("fig2", None), kept.kept("fig3", "k3"), kept.drawn
        (False, False, ['fig2', 'fig3'])
        """
        self.new[name] = key or ""
        if key and self.holds(name, key):
            return True
        for path in self.paths(name):
            path.unlink(missing_ok=True)
        self.drawn.append(name)
        return False

    def missing(self, name: str) -> None:
        """``name`` turned out to have nothing to draw: no figure of that name is in this report."""
        self.new.pop(name, None)

    def close(self) -> None:
        """Remove the figures this report does not show; write the index of those it does."""
        for name in set(self.old) - set(self.new):
            for path in self.paths(name):
                path.unlink(missing_ok=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.index.with_suffix(".tmp")
        tmp.write_text(json.dumps({"figures": dict(sorted(self.new.items()))}), encoding="utf-8")
        os.replace(tmp, self.index)
