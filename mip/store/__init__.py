"""The local store: the source of truth (docs/store.md).

Records live under ``<store>/<model>/<task>/``. A job appends each record as one JSON line to
a pack of its own (``pack-….jsonl``, :mod:`mip.store.packs`): a line is written whole, flushed
to disk (``fdatasync``, in a thread of its own: :class:`mip.data.files.Syncer`), and a job
reports what it stored only once its lines are on disk, so they survive a kill, a crash of the
machine or a power cut. A torn last line (a kill mid-write) is never read. Any number of jobs
may write to one store: each appends to its own packs. Stores written before packs (2026-12-03) hold
one JSON file per record (``<key>.json``); they are read as ever, and a key counts once.

Two more folders live beside the records, both hidden from readers of records:

- ``.attempts/<model>/<task>/<key>.<index>.json`` — the attempts already paid for an
  experiment whose verdict is not final yet (an invalid attempt with attempts left). A
  rerun after a kill carries on from them, so no attempt is paid twice and none beyond
  the limit; they are folded into the record when it is stored.
- ``.quarantine/`` — records (and attempts) that could not be read or failed their schema
  (:mod:`mip.store.quarantine`). They never count as stored: the experiment is asked again,
  and ``analyze.py`` and ``mip.summary`` list them. Readers open the store with
  ``readonly=True``: they list a damaged record (``Store.damaged``) and leave it where it is.

>>> import tempfile
>>> store = Store(tempfile.mkdtemp())
>>> store.keys("smollm2_135m", "arith"), store.where("smollm2_135m", "arith", "3f2a9c0d")
(set(), None)
>>> store.put(record); store.valid_keys("smollm2_135m", "arith", wanted)   # doctest: +SKIP

Exercised by ``pytest tests/test_store_trust.py tests/test_claims.py tests/test_packs.py``.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mip.data.files import Syncer, atomic_write, keys_in
from mip.experiment.records import Attempt, Record
from mip.store.packs import Line, PackWriter, is_pack, scan
from mip.store.quarantine import QUARANTINE, quarantine, quarantine_line, quarantined, skipped_lines, why_unreadable
from mip.store.json_text import record_json
from mip.store.reading import _skipped, iter_records, moved_said, read_model, read_record, record_files

__all__ = ["ATTEMPTS", "QUARANTINE", "JsonFolder", "Store", "iter_records", "quarantine", "quarantined", "read_model",
           "read_record", "record_files", "record_json", "why_unreadable", "_skipped"]

ATTEMPTS = ".attempts"


# --------------------------------------------------------------------------- stores


class JsonFolder:
    """Validated JSON files, one per key, under ``root/<model>/<task>/``: what counts as
    stored is what is listed *and* reads back valid; anything else is quarantined."""

    model: type[BaseModel] = BaseModel

    def __init__(self, root: str | Path, readonly: bool = False):
        self.root = Path(root).expanduser()
        self.readonly = readonly
        """A reader's view: nothing is moved, removed or written (a damaged file is only listed)."""
        self.damaged: list[tuple[Path, str]] = []
        self._moved: list[tuple[Path, str, str, str]] = []  # moved aside, not yet said (reading.moved_said)
        self._folders: set[Path] = set()
        self.syncer = Syncer()

    def flush(self) -> None:
        """Wait until every file written is on disk (raises OSError if the disk failed)."""
        self.syncer.flush()

    def close(self) -> None:
        """:meth:`flush`, then end the flushing thread (a later write starts another)."""
        self.say_moved()
        self.syncer.close()

    def say_moved(self) -> None:
        """Say the damaged records moved aside since last said: one line per folder and kind."""
        moved, self._moved = self._moved, []
        for line in moved_said(moved, self.root / QUARANTINE):
            print(line, file=sys.stderr)

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
        valid = {k for k in wanted if k in listed and self.load(model, task, k) is not None}
        self.say_moved()
        return valid

    def _quarantine(self, path: Path, error: BaseException) -> None:
        why = why_unreadable(error)
        if self.readonly:
            self.damaged.append((path, why))
            warnings.warn(f"Skipping unreadable record {path}: {why[:300]}", stacklevel=3)
            return
        if quarantine(self.root, path, why):
            self._moved.append((path, "file", why, f"Moved the damaged file {path} to {self.root / QUARANTINE} "
                                                   f"({why}); it will be asked again."))

    def __iter__(self) -> Iterator[Any]:
        for model_dir in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")) \
                if self.root.is_dir() else []:
            for task_dir in sorted(p for p in model_dir.iterdir() if p.is_dir()):
                for key in sorted(self.keys(model_dir.name, task_dir.name)):
                    item = self.load(model_dir.name, task_dir.name, key)
                    if item is not None:
                        yield item
                self.say_moved()


class Store(JsonFolder):
    """Records under ``root/<model>/<task>/``, in packs (:mod:`mip.store.packs`) and, as stores
    written before packs hold them, one file each; the attempts of experiments not yet final under
    ``root/.attempts/``."""

    model = Record

    def __init__(self, root: str | Path, readonly: bool = False):
        super().__init__(root, readonly)
        self._writers: dict[tuple[str, str], PackWriter] = {}  # per (model, task)
        self._lines: dict[Path, dict[str, list[Line]]] = {}  # per task folder: key -> its lines
        self._scanned: dict[Path, int] = {}  # per pack: the byte its next scan starts at
        self._skip: set[tuple[str, int]] | None = None
        self._lock = threading.RLock()

    def put(self, record: Record) -> Line:
        """Append a record to this store's pack for its task (on disk once :meth:`flush`
        returns), then drop the kept attempts it folds in (all but its last, which was final
        when it landed)."""
        e = record.experiment
        where = (e.model, e.task)  # no path made a record: 2 % of a job's CPU at 256 in flight
        writer = self._writers.get(where)
        if writer is None:
            folder = self.root / e.model / e.task
            folder.mkdir(parents=True, exist_ok=True)
            writer = self._writers[where] = PackWriter(folder, self.syncer)
        try:
            line = writer.append(record_json(record), record.key)
        except OSError:
            self._writers.pop(where, None)  # a pack whose cut-back failed is written no more
            raise
        for attempt in record.attempts[:-1]:
            (self._attempts_dir(e.model, e.task) / f"{record.key}.{attempt.index}.json").unlink(missing_ok=True)
        return line

    def close(self) -> None:
        """Close this store's packs once their lines are on disk, and end its flushing thread
        (the store can still write: a new one starts)."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        try:
            self.syncer.close()
        except OSError:
            pass  # the job that wrote was told when it flushed before counting what it wrote

    def get(self, model: str, task: str, key: str) -> Record | None:
        return self.load(model, task, key)

    def keys(self, model: str, task: str) -> set[str]:
        """Listed keys (packs scanned, no record read); see :meth:`valid_keys` for what counts."""
        return set(self._pack_lines(model, task)) | super().keys(model, task)

    def where(self, model: str, task: str, key: str) -> Line | Path | None:
        """Where a stored key lies: its (first) pack line, else its record file, else None."""
        found = self._pack_lines(model, task).get(key)
        path = self.path(model, task, key)
        return found[0] if found else path if path.is_file() else None

    def load(self, model: str, task: str, key: str) -> Record | None:
        """The stored record, or None when there is none or it was damaged (then quarantined)."""
        folder = self.root / model / task
        with self._lock:
            index = self._lines.get(folder)
            if index is None or key not in index:
                index = self._pack_lines(model, task)
            for line in list(index.get(key, ())):
                try:
                    data = line.read()
                    record = Record.model_validate_json(data)
                    if record.key != key:
                        raise ValueError(f"holds key {record.key}, not {key}")
                    return record
                except (OSError, ValueError) as e:
                    index[key].remove(line)
                    self._quarantine_line(line, e)
            index.pop(key, None)
        return super().load(model, task, key)

    def _pack_lines(self, model: str, task: str) -> dict[str, list[Line]]:
        """Every key in a task folder's packs with the lines that hold it, oldest pack first;
        each pack is read from where the last call stopped."""
        folder = self.root / model / task
        with self._lock:
            index = self._lines.setdefault(folder, {})
            try:
                names = sorted(n for n in os.listdir(folder) if is_pack(n))
            except (FileNotFoundError, NotADirectoryError):
                return index
            if self._skip is None:
                self._skip = skipped_lines(self.root)
            skip = self._skip
            for name in names:
                pack = folder / name
                try:
                    found, self._scanned[pack] = scan(pack, self._scanned.get(pack, 0))
                except FileNotFoundError:
                    continue
                where = f"{model}/{task}/{name}"
                for key, line in found:
                    if skip and (where, line.offset) in skip:
                        continue
                    if key is None:
                        self._quarantine_line(line, ValueError("the line names no record key"))
                    else:
                        index.setdefault(key, []).append(line)
            return index

    def _quarantine_line(self, line: Line, error: BaseException) -> None:
        why = why_unreadable(error)
        if self.readonly:
            self.damaged.append((line.pack, f"the line at byte {line.offset}: {why}"))
            warnings.warn(f"Skipping unreadable record {line.pack}, the line at byte {line.offset}: {why[:300]}",
                          stacklevel=3)
            return
        try:
            data = line.read()
        except (OSError, ValueError):
            data = b""
        quarantine_line(self.root, line, why, data)
        self._skip = (self._skip or set()) | {(str(line.pack.relative_to(self.root)), line.offset)}
        self._moved.append((line.pack, "line", why, f"Copied the damaged line at byte {line.offset} of {line.pack} to "
                            f"{self.root / QUARANTINE} ({why}); it no longer counts and will be asked again."))

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
        self.say_moved()
        return {k: sorted(v, key=lambda a: a.index) for k, v in found.items()}

