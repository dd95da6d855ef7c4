"""The local store: the source of truth (DESIGN.md §5).

One JSON file per experiment at ``<store>/<model>/<task>/<key>.json``. A file is written
to a temporary name and renamed into place, so a reader never sees half of one and a
killed job loses nothing it wrote; then it and its folder are flushed to disk (``fsync``,
in a thread of its own: :class:`Syncer`), and a job reports what it stored only once its
files are on disk, so they survive a crash of the machine or a power cut. A file a crash
did tear is caught when it is read back (below). Any number of jobs may write to one store.

Two more folders live beside the records, both hidden from readers of records:

- ``.attempts/<model>/<task>/<key>.<index>.json`` — the attempts already paid for an
  experiment whose verdict is not final yet (an invalid attempt with attempts left). A
  rerun after a kill carries on from them, so no attempt is paid twice and none beyond
  the limit; they are folded into the record when it is stored.
- ``.quarantine/`` — records (and attempts) that could not be read or failed their
  schema, moved aside by a job with a line in ``.quarantine/log.jsonl`` saying why. They
  never count as stored: the experiment is asked again, and ``analyze.py`` and ``mip.summary``
  list them. Readers open the store with ``readonly=True``: they list a damaged file
  (``Store.damaged``) and leave it where it is.

>>> store = Store("results/store")                    # doctest: +SKIP
>>> store.put(record); store.valid_keys("smollm2_135m", "arith", wanted)   # doctest: +SKIP

Exercised by ``pytest tests/test_store.py``.

>>> why_unreadable(ValueError("Expecting value\\nline 2"))
'ValueError: Expecting value'
"""

from __future__ import annotations

import functools

import datetime as dt
import os
import sys
import warnings
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from mip.data.files import Syncer, atomic_write, keys_in
from mip.data.columns import JsonStrings
from mip.experiment.records import Attempt, Record, schema_error

ATTEMPTS, QUARANTINE = ".attempts", ".quarantine"
M = TypeVar("M", bound=BaseModel)


# --------------------------------------------------------------------------- serialising


def _fields(value: Any) -> Any:
    if isinstance(value, BaseModel):
        omit = _excluded_if(type(value))
        if omit:  # a field pydantic leaves out of its JSON when its exclude_if holds
            return {k: v for k, v in value.__dict__.items() if k not in omit or not omit[k](v)}
        return value.__dict__
    if isinstance(value, JsonStrings):
        return orjson.Fragment(value.json)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@functools.cache
def _excluded_if(model: type[BaseModel]) -> dict[str, Any]:
    return {name: f.exclude_if for name, f in model.model_fields.items() if f.exclude_if is not None}


def record_json(record: BaseModel) -> bytes:
    """A record as UTF-8 JSON, the bytes pydantic would write, made by orjson from the
    models' fields: twice as fast on a record's 4,000 short id and label strings, and
    faster again where they come as :class:`mip.data.columns.JsonStrings`. Where orjson refuses
    a value (a lone surrogate, an integer past 64 bits) pydantic writes it."""
    try:
        return orjson.dumps(record, default=_fields)
    except orjson.JSONEncodeError:
        plain = record.model_copy(update={k: list(v) for k, v in record.__dict__.items() if isinstance(v, JsonStrings)})
        return plain.__pydantic_serializer__.to_json(plain)


# --------------------------------------------------------------------------- listing and reading


def read_model(path: Path, model: type[M]) -> M:
    """A stored JSON file validated against ``model``; raises ValueError or OSError when it
    cannot be read or fails its schema."""
    return model.model_validate_json(path.read_bytes())


def why_unreadable(error: BaseException) -> str:
    """One line saying why a file could not be read; for a schema failure, the first field
    that failed and what it should hold (``verdict: Input should be 'correct', …, got 'maybe'``)."""
    if isinstance(error, ValidationError) and error.error_count():
        return f"ValidationError: {schema_error(error)}"
    text = str(error)
    return f"{type(error).__name__}: {text.splitlines()[0][:300] if text else ''}"


def read_record(path: Path) -> Record | None:
    """A stored record, or None with a warning naming the file when it is unreadable."""
    try:
        return read_model(path, Record)
    except (OSError, ValueError) as e:
        warnings.warn(f"Skipping unreadable record {path}: {why_unreadable(e)[:300]}", stacklevel=2)
        return None


def _skipped(relative: tuple[str, ...]) -> bool:
    """Files under a store or results folder that are no records: hidden files and folders
    (temporary files, attempts, quarantine, claims), job manifests, cached pools and W&B
    files. Judged on the path *below* the folder being read, so a store that itself lies
    under a folder named ``wandb`` or ``pools`` is read like any other."""
    return (any(part.startswith(".") for part in relative) or relative[-1] == "job.json"
            or bool({"pools", "wandb"} & set(relative[:-1])))


def iter_records(paths: Iterable[str | Path], damaged: list[tuple[Path, str]] | None = None) -> Iterator[Record]:
    """Every readable record under the given folders (a store, job or sweep folders).

    A file that cannot be read or fails the schema is skipped with a warning naming it, and
    appended to ``damaged`` with the reason when a list is given.
    """
    for root in map(Path, paths):
        files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
        for path in files:
            if root.is_dir() and _skipped(path.relative_to(root).parts):
                continue
            try:
                yield read_model(path, Record)
            except (OSError, ValueError) as e:
                why = why_unreadable(e)[:300]
                warnings.warn(f"Skipping unreadable record {path}: {why}", stacklevel=2)
                if damaged is not None:
                    damaged.append((path, why))


# --------------------------------------------------------------------------- quarantine


def quarantine(store_root: Path, path: Path, why: str) -> Path | None:
    """Move a damaged file under ``<store>/.quarantine/`` (same relative path, a time stamp
    added) and log why; it then no longer counts as stored. None if another process moved
    it first."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    try:
        relative = path.relative_to(store_root)
    except ValueError:
        relative = Path(path.name)
    target = store_root / QUARANTINE / relative.parent / f"{relative.stem}.{stamp}{relative.suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    line = {"file": str(relative), "moved_to": str(target.relative_to(store_root)), "why": why[:500],
            "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    with open(store_root / QUARANTINE / "log.jsonl", "ab") as log:  # one short append: atomic on POSIX
        log.write(orjson.dumps(line) + b"\n")
    return target


def quarantined(store_root: str | Path) -> list[dict[str, str]]:
    """What was moved aside under a store, oldest first (``file``, ``moved_to``, ``why``, ``at``)."""
    log = Path(store_root).expanduser() / QUARANTINE / "log.jsonl"
    if not log.is_file():
        return []
    out = []
    for line in log.read_bytes().splitlines():
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return out


class JsonFolder:
    """Validated JSON files, one per key, under ``root/<model>/<task>/``: what counts as
    stored is what is listed *and* reads back valid; anything else is quarantined."""

    model: type[BaseModel] = BaseModel

    def __init__(self, root: str | Path, readonly: bool = False):
        self.root = Path(root).expanduser()
        self.readonly = readonly
        """A reader's view: nothing is moved, removed or written (a damaged file is only listed)."""
        self.damaged: list[tuple[Path, str]] = []
        self._folders: set[Path] = set()
        self.syncer = Syncer()

    def flush(self) -> None:
        """Wait until every file written is on disk (raises OSError if the disk failed)."""
        self.syncer.flush()

    def path(self, model: str, task: str, key: str) -> Path:
        return self.root / model / task / f"{key}.json"

    def _put(self, path: Path, data: bytes | str) -> Path:
        if path.parent not in self._folders:  # one mkdir per folder, not per file
            path.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(path.parent)
        atomic_write(path, data, make_folder=False, syncer=self.syncer)
        return path

    def keys(self, model: str, task: str) -> set[str]:
        """Listed keys (no file read); see :meth:`valid_keys` for what counts as stored."""
        return keys_in(self.root / model / task, clear_stale=not self.readonly)

    def load(self, model: str, task: str, key: str) -> Any:
        """The stored item, or None when there is none or it was damaged (then quarantined)."""
        path = self.path(model, task, key)
        try:
            item = read_model(path, self.model)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            self._quarantine(path, e)
            return None
        if getattr(item, "key", key) != key:  # a file renamed or copied over another key
            self._quarantine(path, ValueError(f"holds key {item.key}, not {key}"))
            return None
        return item

    def valid_keys(self, model: str, task: str, wanted: Collection[str]) -> set[str]:
        """The keys of ``wanted`` that are stored and read back valid. Damaged files are
        quarantined, so the experiment is asked again."""
        listed = self.keys(model, task)
        return {k for k in wanted if k in listed and self.load(model, task, k) is not None}

    def _quarantine(self, path: Path, error: BaseException) -> None:
        why = why_unreadable(error)
        if self.readonly:
            self.damaged.append((path, why))
            warnings.warn(f"Skipping unreadable record {path}: {why[:300]}", stacklevel=3)
            return
        if quarantine(self.root, path, why):
            print(f"Moved the damaged file {path} to {self.root / QUARANTINE} ({why}); it will be asked again.",
                  file=sys.stderr)

    def __iter__(self) -> Iterator[Any]:
        for model_dir in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")) \
                if self.root.is_dir() else []:
            for task_dir in sorted(p for p in model_dir.iterdir() if p.is_dir()):
                for key in sorted(keys_in(task_dir)):
                    item = self.load(model_dir.name, task_dir.name, key)
                    if item is not None:
                        yield item


class Store(JsonFolder):
    """Records as one JSON file each under ``root/<model>/<task>/``, and the attempts of
    experiments not yet final under ``root/.attempts/``."""

    model = Record

    def put(self, record: Record) -> Path:
        """Store a record durably, then drop the kept attempts it folds in (all but its last,
        which was final when it landed)."""
        e = record.experiment
        path = self._put(self.path(e.model, e.task, record.key), record_json(record))
        for attempt in record.attempts[:-1]:
            (self._attempts_dir(e.model, e.task) / f"{record.key}.{attempt.index}.json").unlink(missing_ok=True)
        return path

    def get(self, model: str, task: str, key: str) -> Record | None:
        return self.load(model, task, key)

    # ------------------------------------------------------------------ attempts
    def _attempts_dir(self, model: str, task: str) -> Path:
        return self.root / ATTEMPTS / model / task

    def put_attempt(self, model: str, task: str, key: str, attempt: Attempt) -> None:
        """Keep one paid attempt of an experiment whose verdict is not final yet."""
        self._put(self._attempts_dir(model, task) / f"{key}.{attempt.index}.json", record_json(attempt))

    def attempts(self, model: str, task: str, keys: Collection[str]) -> dict[str, list[Attempt]]:
        """The attempts already paid for each of ``keys`` that has some, in order. An
        unreadable attempt file is quarantined (its attempt is lost, and said so)."""
        folder = self._attempts_dir(model, task)
        if not folder.is_dir():
            return {}
        found: dict[str, list[Attempt]] = {}
        for name in sorted(keys_in(folder, clear_stale=not self.readonly)):
            key, _, _ = name.partition(".")
            if key not in keys:
                continue
            path = folder / f"{name}.json"
            try:
                found.setdefault(key, []).append(read_model(path, Attempt))
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as e:
                self._quarantine(path, e)
        return {k: sorted(v, key=lambda a: a.index) for k, v in found.items()}

