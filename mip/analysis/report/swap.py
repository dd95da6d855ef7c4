"""A report written beside its folder and swapped in whole: a kill at any moment leaves the previous
report or the new one in ``out_dir``, never a mix.

The new report is written into a hidden folder beside ``out_dir`` (``.<name>.writing-<pid>``), which
starts with what ``out_dir`` holds that is not the report (``.inputs.json``, Hydra's ``.hydra/`` and
log) and the record pages kept from the last report (linked, not copied). Then the two folders are
exchanged in one step (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames, the old folder
kept beside until the second is done), and the old one is removed. A folder left beside by a kill
is removed by the next analysis.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> with beside(root / "report") as new:
...     _ = (new / "report.md").write_text("new")
>>> (root / "report" / "report.md").read_text(), [p.name for p in root.iterdir()]
('new', ['report'])

Exercised by ``pytest tests/test_report_scale.py``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

#: What an out_dir holds beside the report, carried into the new one as it is.
CARRIED = (".inputs.json", ".hydra", "analyze.log")
#: Kept from the last report: record pages are written again only when their record changed, figures
#: only when what they are drawn from did (:mod:`mip.analysis.report.kept_figures`), the search's
#: shards only when their rows did (:mod:`mip.analysis.report.search_index`), list pages only when what
#: they show did (:class:`mip.analysis.report.kept_pages.KeptLists`).
KEPT = ("records", "figures", "search", "lists")


@contextlib.contextmanager
def beside(folder: Path) -> Iterator[Path]:
    """A fresh folder beside ``folder`` to write the report in; swapped in whole on leaving without an error."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for left in folder.parent.glob(f".{folder.name}.writing-*"):  # a kill's leftovers: an old report or a part
        shutil.rmtree(left, ignore_errors=True)
    new = folder.parent / f".{folder.name}.writing-{os.getpid()}"
    new.mkdir()
    try:
        for name in CARRIED:
            if (folder / name).is_dir():
                shutil.copytree(folder / name, new / name)
            elif (folder / name).is_file():
                shutil.copy2(folder / name, new / name)
        for name in KEPT:
            if (folder / name).is_dir():
                shutil.copytree(folder / name, new / name, copy_function=os.link)
        yield new
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    if (new / "analyze.log").is_file() and (folder / "analyze.log").is_file():
        shutil.copy2(folder / "analyze.log", new / "analyze.log")  # what was logged while writing
    swap(new, folder)
    shutil.rmtree(new, ignore_errors=True)  # now the old report


def swap(new: Path, folder: Path) -> None:
    """Put ``new`` in ``folder``'s place and ``folder`` in ``new``'s, in one step where the system can."""
    if _exchange(new, folder):
        return
    old = folder.parent / f".{folder.name}.writing-old-{os.getpid()}"
    os.rename(folder, old)
    os.rename(new, folder)
    os.rename(old, new)


def _exchange(a: Path, b: Path) -> bool:
    """``renameat2(a, b, RENAME_EXCHANGE)``: False where the C library or the file system lacks it."""
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd, exchange = -100, 2
    return call(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0
