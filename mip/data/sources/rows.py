"""What a loader returns — every row it read, labelled, and the rows it dropped by reason —
and the file helpers the loaders share.

>>> one_line("a review\\n  over two lines ")
'a review   over two lines'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


class DataError(RuntimeError):
    """A data source is missing, unreadable or unusable; the message says what to do."""


@dataclass
class Row:
    id: str
    text: str
    label: str
    target: str | None = None
    """The instance-level ground truth where it is more than the label (App. A): the GSM8K
    final number, the count of "the", an expression's value. None means the label."""


@dataclass
class LoadResult:
    rows: list[Row] = field(default_factory=list)
    read: int = 0
    dropped: Counter = field(default_factory=Counter)
    source: str = ""
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def keep(self, id: str, text: str, label: str | None, drop_reason: str = "", target: str | None = None) -> None:
        """Count one row read; keep it when it has a label, else count why it was dropped."""
        self.read += 1
        text = one_line(text)
        if not text:
            self.dropped["empty text"] += 1
        elif label is None:
            self.dropped[drop_reason or "no label"] += 1
        else:
            self.rows.append(Row(id, text, label, target))

    def malformed(self) -> None:
        """Count one row read that has not the source's shape."""
        self.read += 1
        self.dropped["malformed row"] += 1


def one_line(text: str | None) -> str:
    # An instance is one `Instance i: text` line of the prompt, so real line breaks
    # inside a text become spaces. Literal escape text such as `\n` or `\u2019` in
    # TweetEval is kept, as the paper keeps it.
    if not text:
        return ""
    return " ".join(text.replace("\r", "\n").split("\n")).strip()


def require(paths: Iterable[Path], what: str, otherwise: str = "or drop data_dir=… to read the hub copy") -> None:
    """Raise a DataError naming every file of ``paths`` that is missing; ``otherwise``: where else
    the source can come from (a source with no hub copy says where to get its files)."""
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise DataError(
            f"{what}: expected files are missing under the data folder: {', '.join(missing)}. "
            f"Lay the source files out as in shared/data/raw (see its README), {otherwise}."
        )


def lines(path: Path) -> list[str]:
    """The file's lines, decoded leniently: a broken byte becomes U+FFFD and the row is still counted."""
    return path.read_text(encoding="utf-8", errors="replace").splitlines()
