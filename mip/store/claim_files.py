"""A claim file on disk: writing one, telling whether a path is still the file a job holds,
and reading what a claims folder's own time stamp says (:mod:`mip.store.claims` decides with them).

>>> listing(Path("/no/such/claims/folder"))
()
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import uuid
from pathlib import Path
from typing import IO

from mip.data.files import local_disk


def listing(folder: Path) -> tuple:
    """What changes when a claim file appears or goes (one ``stat``, not a listing)."""
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return ()
    return st.st_ino, st.st_mtime_ns


def quiet_since(folder: Path, before: tuple, handle: IO[str], settle_s: float) -> bool:
    """Whether the claims folder, as ``before`` found it, had not changed for ``settle_s``
    when this job's claim file (open as ``handle``) was written: both times from the disk's own
    clock, and only on a local disk (a network file system may answer from a cached ``stat``)."""
    if not before or not local_disk(folder):
        return False
    written = os.fstat(handle.fileno()).st_mtime_ns
    return written - before[1] >= settle_s * 1e9


def same_file(path: Path, handle: IO[str]) -> bool:
    """Whether ``path`` is still the file ``handle`` holds open (not removed nor replaced)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def write_claim(folder: Path, keys: frozenset[str], output_dir: str | Path,
                since: tuple[float, str]) -> tuple[Path, IO[str]]:
    """A new claim file of this job, locked and written, and its open handle (the lock lives with it)."""
    host = socket.gethostname()
    path = folder / f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}.claim"
    handle = open(path, "x", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        json.dump({"host": host, "pid": os.getpid(), "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   "output_dir": str(output_dir), "since": list(since), "keys": sorted(keys)}, handle)
        handle.flush()
    except BaseException:
        handle.close()
        path.unlink(missing_ok=True)
        raise
    return path, handle
