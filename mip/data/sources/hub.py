"""The Hugging Face hub copy of a source: its rows, read with ``datasets``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mip.data.sources.rows import DataError, LoadResult

if TYPE_CHECKING:
    from mip.config import TaskConfig


def rows(path: str, name: str | None, split: str) -> Iterable[dict[str, Any]]:
    """The rows of one split of a hub dataset; a DataError that says what to do when it cannot be loaded."""
    try:
        from datasets import load_dataset
    except ImportError as e:  # pragma: no cover - datasets is a base dependency
        raise DataError("Reading from the Hugging Face hub needs `pip install datasets`.") from e
    try:
        return load_dataset(path, name, split=split)
    except Exception as e:  # noqa: BLE001 - any hub failure gets the same advice
        raise DataError(
            f"Could not load {path}{'/' + name if name else ''} split {split!r} from the Hugging Face hub "
            f"({type(e).__name__}: {str(e)[:200]}). Without hub access, pass data_dir=<folder with the "
            "source files laid out as shared/data/raw>."
        ) from e


def load(cfg: TaskConfig, to_row: Callable[[dict[str, Any]], tuple]) -> LoadResult:
    """Every row of the hub copy's splits, as ``(text, label, drop reason[, target])`` by ``to_row``."""
    src = cfg.source
    out = LoadResult(source=f"hub:{src.hub_path}" + (f"/{src.hub_name}" if src.hub_name else ""))
    for split in src.hub_splits:
        for i, row in enumerate(rows(src.hub_path, src.hub_name, split)):
            out.keep(f"{split}:{i}", *to_row(row))
    return out
