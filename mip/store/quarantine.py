"""Moving damaged records aside: ``<store>/.quarantine/``, and its log ``log.jsonl`` saying why.

A record file that cannot be read or fails its schema is moved there, same relative path, a
time stamp added. A damaged line of a pack cannot be moved out of a file its job may still
append to: it is copied there, and its log line names the pack and the byte it starts at
(``line_at``), which every reader then skips. Either way it no longer counts as stored, so
the experiment is asked again; ``analyze.py`` and ``mip.summary`` list what was moved.

>>> why_unreadable(ValueError("Expecting value\\nline 2"))
'ValueError: Expecting value'
"""

from __future__ import annotations

import datetime as dt
import errno
import os
from pathlib import Path

import orjson
from pydantic import ValidationError

from mip.data.files import atomic_write
from mip.experiment.records import schema_error
from mip.store.packs import Line

QUARANTINE = ".quarantine"


def why_unreadable(error: BaseException) -> str:
    """One line saying why a file could not be read; for a schema failure, the first field
    that failed and what it should hold (``verdict: Input should be 'correct', …, got 'maybe'``)."""
    if isinstance(error, ValidationError) and error.error_count():
        return f"ValidationError: {schema_error(error)}"
    text = str(error)
    return f"{type(error).__name__}: {text.splitlines()[0][:300] if text else ''}"


def _stamp() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")


def _relative(store_root: Path, path: Path) -> Path:
    try:
        return path.relative_to(store_root)
    except ValueError:
        return Path(path.name)


def log_quarantined(store_root: Path, entry: dict) -> None:
    """Append one entry to the quarantine log, with the time."""
    entry = {**entry, "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    with open(store_root / QUARANTINE / "log.jsonl", "ab") as log:  # one short append: atomic on POSIX
        log.write(orjson.dumps(entry) + b"\n")


def move(path: Path, target: Path) -> None:
    """Move the file ``path`` to ``target``: a rename where both lie on one file system; else —
    a task folder or the record on another mount, a record that is a symlink — the file's
    file is first renamed aside in its own folder, its bytes copied beside ``target``, flushed to
    disk (``fsync``), renamed into place, and only then is the file renamed aside removed (the
    link, where it is one; what it points to stays). A kill in between leaves the damaged file
    renamed aside in its folder (a dot file no reader counts), and the rerun asks again."""
    if not path.is_symlink():
        try:
            os.replace(path, target)
            return
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
    # Claim the file first with a rename in its own folder (one file system, atomic): another
    # process that quarantines it too, or a job that stores a fresh record at ``path`` meanwhile,
    # then never has its file removed by this one.
    claimed = path.with_name(f".{path.name}.quarantining-{os.getpid()}")
    os.replace(path, claimed)  # FileNotFoundError if another process moved it first
    if claimed.is_symlink() and not claimed.exists():  # a link to nothing: what it named is kept
        data = os.readlink(claimed).encode("utf-8", "surrogateescape")
    else:
        data = claimed.read_bytes()  # a damaged record: small, read whole
    atomic_write(target, data)  # a temporary file beside target, fsync, rename, fsync of the folder
    claimed.unlink(missing_ok=True)


def quarantine(store_root: Path, path: Path, why: str) -> Path | None:
    """Move a damaged file under ``<store>/.quarantine/`` (same relative path, a time stamp
    added) and log why; it then no longer counts as stored. None if another process moved
    it first."""
    relative = _relative(store_root, path)
    target = store_root / QUARANTINE / relative.parent / f"{relative.stem}.{_stamp()}{relative.suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        move(path, target)
    except FileNotFoundError:
        return None
    log_quarantined(store_root, {"file": str(relative), "moved_to": str(target.relative_to(store_root)),
                                 "why": why[:500]})
    return target


def quarantine_line(store_root: Path, line: Line, why: str, data: bytes) -> Path:
    """Copy a pack's damaged line under ``<store>/.quarantine/`` (named by its pack and the
    byte it starts at) and log why; readers skip it from then on (:func:`skipped_lines`)."""
    relative = _relative(store_root, line.pack)
    target = store_root / QUARANTINE / relative.parent / f"{relative.stem}.{line.offset}.{_stamp()}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data + b"\n")
    log_quarantined(store_root, {"file": str(relative), "line_at": line.offset,
                                 "moved_to": str(target.relative_to(store_root)), "why": why[:500]})
    return target


def quarantined(store_root: str | Path) -> list[dict]:
    """What was moved aside under a store, oldest first (``file``, ``moved_to``, ``why``, ``at``,
    and ``line_at`` for a pack's line)."""
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


def skipped_lines(store_root: str | Path) -> set[tuple[str, int]]:
    """(pack relative to the store, byte) of every pack line the quarantine log lists."""
    return {(e["file"], e["line_at"]) for e in quarantined(store_root)
            if isinstance(e, dict) and isinstance(e.get("line_at"), int) and isinstance(e.get("file"), str)}


def moved_what(entry: dict) -> str:
    """What a quarantine log entry moved aside, in a few words.

    >>> moved_what({"file": "m/t/pack-1.jsonl", "line_at": 0}), moved_what({"file": "m/t/k.json"})
    ('m/t/pack-1.jsonl, the line at byte 0', 'm/t/k.json')
    """
    return f"{entry.get('file')}" + (f", the line at byte {entry['line_at']}" if "line_at" in entry else "")
