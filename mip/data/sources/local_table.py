"""A user's own CSV / TSV / JSONL / JSON / Parquet table with a text and a label column
(``source.loader: table``; conf/task/example_reviews.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources.rows import DataError, LoadResult

if TYPE_CHECKING:
    from mip.config import TaskConfig

#: The repository folder (the one holding conf/): a relative table path without data_dir is
#: read from here, so a run finds the same file whatever folder the shell is in.
REPO_ROOT = Path(__file__).resolve().parents[3]


def table_path(path: str, data_dir: Path | None) -> Path:
    """Where a task's ``source.path`` points: as given when absolute (``~`` expanded), else
    relative to ``data_dir`` when one is set, else relative to the repository folder."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (Path(data_dir).expanduser() if data_dir is not None else REPO_ROOT) / p


def load_table(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    """A user's own table: each row's text, and its label mapped by ``source.label_map``."""
    from mip.data.sources.tables import read_table  # it raises mip.data's DataError: imported when used

    src = cfg.source
    if not src.path:
        raise DataError(f"Task {cfg.name!r} uses the table loader: set source.path to a .csv, .jsonl or .parquet file.")
    path = table_path(src.path, data_dir)
    if not path.is_file():
        where = "data_dir" if data_dir is not None else f"the repository folder {REPO_ROOT} (no data_dir set)"
        raise DataError(f"Task {cfg.name!r}: the table {path} does not exist; a relative source.path is read from "
                        f"{where}. Give an absolute path or set data_dir.")
    frame = read_table(path)
    for col in (src.text_column, src.label_column):
        if col not in frame.columns:
            raise DataError(f"Task {cfg.name!r}: {path.name} has no column {col!r}; "
                            f"its columns are {list(frame.columns)}.")
    mapping = {str(k): v for k, v in src.label_map.items()} or {label: label for label in cfg.labels}
    out = LoadResult(source="local", files=[str(path)])
    for i, (text, raw) in enumerate(zip(frame[src.text_column], frame[src.label_column])):
        label = mapping.get(str(raw).strip()) if raw == raw else None  # NaN != NaN
        out.keep(f"{path.stem}:{i}", "" if text != text else str(text), label, "label not among the task's labels")
    return out
