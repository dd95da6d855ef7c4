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
  schema, moved aside with a line in ``.quarantine/log.jsonl`` saying why. They never
  count as stored: the experiment is asked again, and ``analyze.py`` and ``mip.summary``
  list them.

>>> store = Store("results/store")                    # doctest: +SKIP
>>> store.put(record); store.valid_keys("smollm2_135m", "arith", wanted)

Exercised by ``pytest tests/test_store.py``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import queue
import socket
import sys
import threading
import warnings
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from mip.records import Attempt, JsonStrings, Record

_HOST = socket.gethostname().split(".")[0]
ATTEMPTS, QUARANTINE = ".attempts", ".quarantine"
#: A temporary file of another host (whose process we cannot see) is stale after this long.
STALE_TMP_S = 24 * 3600.0
M = TypeVar("M", bound=BaseModel)


# --------------------------------------------------------------------------- writing


_TMP_COUNTER = itertools.count()


def atomic_write(path: Path, data: str | bytes, make_folder: bool = True, durable: bool = True,
                 syncer: Syncer | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place: readers
    see the old state or the whole file, never half of it, and a killed process loses
    nothing once this returns. ``durable`` also flushes the file and its folder to disk
    (``fsync``) so the file survives a crash of the machine: here, or in ``syncer``'s
    thread (see :class:`Syncer`). The temporary name is unique per host, process and write,
    so writers never share one."""
    if make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{_HOST}-{os.getpid()}-{next(_TMP_COUNTER)}{path.suffix}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with memoryview(data.encode("utf-8") if isinstance(data, str) else data) as view:
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view):]
        os.replace(tmp, path)  # atomic on POSIX
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    if not durable:
        os.close(fd)
    elif syncer is not None:
        syncer.submit(fd, path.parent)
    else:
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_folder(path.parent)


class Syncer:
    """Flushes written files and their folders to disk in a thread of its own.

    ``fsync`` waits for the disk (1–2 ms a file here), not the CPU, and releases the GIL; in
    the job's thread it would hold up every request behind it (64 in flight: a fifth of the
    rate). Files are renamed into place before they are handed over, so a killed process
    loses nothing; :meth:`flush` waits until every file handed over is on disk and raises the
    first error the disk gave. Folders are flushed once per batch.
    """

    def __init__(self, limit: int = 256):
        self._queue: queue.Queue[tuple[int, Path]] = queue.Queue(maxsize=limit)  # bounds the open files
        self._idle = threading.Condition()
        self._pending = 0
        self._error: OSError | None = None
        self._thread: threading.Thread | None = None

    def submit(self, fd: int, folder: Path) -> None:
        self.raise_error()
        with self._idle:
            self._pending += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mip-fsync", daemon=True)
            self._thread.start()
        self._queue.put((fd, folder))

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty() and len(batch) < 512:
                batch.append(self._queue.get_nowait())
            try:
                for fd, _ in batch:
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                for folder in {folder for _, folder in batch}:
                    fsync_folder(folder)
            except OSError as e:
                self._error = self._error or e
            with self._idle:
                self._pending -= len(batch)
                self._idle.notify_all()

    def flush(self) -> None:
        """Wait until everything handed over is on disk; raise the disk's first error."""
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0)
        self.raise_error()

    def raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename into it) to disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fields(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.__dict__
    if isinstance(value, JsonStrings):
        return orjson.Fragment(value.json)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def record_json(record: BaseModel) -> bytes:
    """A record as UTF-8 JSON, the bytes pydantic would write, made by orjson from the
    models' fields: twice as fast on a record's 4,000 short id and label strings, and
    faster again where they come as :class:`mip.records.JsonStrings`. Where orjson refuses
    a value (a lone surrogate, an integer past 64 bits) pydantic writes it."""
    try:
        return orjson.dumps(record, default=_fields)
    except orjson.JSONEncodeError:
        plain = record.model_copy(update={k: list(v) for k, v in record.__dict__.items() if isinstance(v, JsonStrings)})
        return plain.__pydantic_serializer__.to_json(plain)


# --------------------------------------------------------------------------- listing and reading


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_tmp(entry: os.DirEntry) -> bool:
    """A temporary file whose writer is gone: its process on this host has ended, or it is
    older than :data:`STALE_TMP_S` (another host's)."""
    parts = entry.name.split("-")  # .tmp-<host>-<pid>-<n>.json; a host name may hold dashes
    try:
        host, pid = "-".join(parts[1:-2]), int(parts[-2])
    except (ValueError, IndexError):
        return False
    if host == _HOST:
        return not _pid_alive(pid)
    try:
        return dt.datetime.now().timestamp() - entry.stat().st_mtime > STALE_TMP_S
    except OSError:
        return False


def keys_in(folder: Path, clear_stale: bool = False) -> set[str]:
    """The keys stored in ``folder`` (one ``<key>.json`` each), from its listing alone;
    temporary files, which start with a dot, are not keys. ``clear_stale`` removes the
    temporary files of writers that are gone."""
    if not folder.is_dir():
        return set()
    keys = set()
    for entry in os.scandir(folder):
        name = entry.name
        if name.startswith(".tmp-"):
            if clear_stale and _stale_tmp(entry):
                Path(entry.path).unlink(missing_ok=True)
        elif name.endswith(".json") and not name.startswith("."):
            keys.add(name[:-5])
    return keys


def read_model(path: Path, model: type[M]) -> M:
    """A stored JSON file validated against ``model``; raises ValueError or OSError when it
    cannot be read or fails its schema."""
    return model.model_validate_json(path.read_bytes())


def read_record(path: Path) -> Record | None:
    """A stored record, or None with a warning naming the file when it is unreadable."""
    try:
        return read_model(path, Record)
    except (OSError, ValueError) as e:
        warnings.warn(f"Skipping unreadable record {path}: {type(e).__name__}: {str(e)[:200]}", stacklevel=2)
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

    A file that cannot be read or fails the schema is skipped; it is appended to ``damaged``
    with the reason when a list is given (else a warning names it).
    """
    for root in map(Path, paths):
        files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
        for path in files:
            if root.is_dir() and _skipped(path.relative_to(root).parts):
                continue
            try:
                yield read_model(path, Record)
            except (OSError, ValueError) as e:
                why = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                if damaged is None:
                    warnings.warn(f"Skipping unreadable record {path}: {why}", stacklevel=2)
                else:
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

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser()
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
        return keys_in(self.root / model / task, clear_stale=True)

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
        why = f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
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
        for name in sorted(keys_in(folder, clear_stale=True)):
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

