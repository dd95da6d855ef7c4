"""A user's table read from disk: the one reader behind the ``table`` loader and the audit.

>>> from mip.data.sources.tables import read_table               # doctest: +SKIP
>>> frame = read_table("reviews.csv")                   # .csv .tsv .jsonl .json .parquet  # doctest: +SKIP

Whatever is wrong with the file (missing, empty, a format it cannot read, contents that do
not parse) comes back as one :class:`~mip.data.sources.DataError` line naming the file and
what to do, never as a pandas traceback. Which columns and labels a caller needs is the
caller's check. Exercised by ``pytest tests/test_tables.py``.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "reviews.csv"
>>> _ = path.write_text("review,stars\\ngood,pos\\nbad,neg\\n")
>>> read_table(path)["stars"].tolist()
['pos', 'neg']
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from mip.data.sources import DataError

READERS: dict[str, Callable[[Path], pd.DataFrame]] = {
    ".csv": pd.read_csv,
    ".tsv": lambda p: pd.read_csv(p, sep="\t"),
    ".jsonl": lambda p: pd.read_json(p, lines=True),
    ".json": pd.read_json,
    ".parquet": pd.read_parquet,
}
"""Readers by file suffix (lower case)."""


def read_table(path: str | Path) -> pd.DataFrame:
    """The rows of the table at ``path`` (``~`` expanded), or a one-line :class:`DataError`."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"The table {path} does not exist; check the path.")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise DataError(f"Cannot read {path.name}: save the table as one of {', '.join(READERS)}.")
    if path.stat().st_size == 0:
        raise DataError(f"The table {path} is empty: give a file with a header row and one row per instance.")
    try:
        frame = reader(path)
    except ImportError as e:  # parquet without pyarrow
        raise DataError(f"Reading {path.name} needs a package that is missing ({e.name or e}): pip install pyarrow, "
                        "or save the table as .csv.") from None
    except (ValueError, OSError) as e:  # pandas' parser, JSON and Arrow errors are ValueErrors
        raise DataError(f"The table {path} could not be read as {path.suffix.lower()} ({_one_line(e)}); "
                        "check the file's format.") from None
    if frame.empty:
        raise DataError(f"The table {path} is empty: it has no rows.")
    return frame


def _one_line(error: Exception, limit: int = 200) -> str:
    """A library error's message on one line, clipped: parser messages can run over lines."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
