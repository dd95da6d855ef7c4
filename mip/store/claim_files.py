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
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
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


#: Per claims folder: its listing right after this process's own last change to it (a claim
#: written or released) and the latest time (disk clock, ns) anyone else may have changed it by
#: then. A sweep's jobs run one after another in one process; each release changes the folder,
#: and without this the next job would wait its settle for a change that hides no one's claim.
_OWN: dict[Path, tuple[tuple, int | None]] = {}
_OWN_LOCK = threading.Lock()


def others_changed(folder: Path, seen: tuple) -> int | None:
    """The latest time (the disk's clock, ns) by which someone other than this process may have
    changed the claims folder that :func:`listing` read as ``seen``; None where there is none.
    Where ``seen`` is just what this process's own last change left, that change does not count
    (removing or writing its own claim hides no running job's). A change by someone else in the
    same clock tick as this process's own, right after it, would be taken for it: the disk's
    clock ticks every few milliseconds."""
    if not seen:
        return None
    own = _OWN.get(folder)
    return own[1] if own is not None and own[0] == seen else seen[1]


@contextmanager
def own_change(folder: Path) -> Iterator[None]:
    """Change the claims folder (write or remove this process's own claim file) and remember
    what the change left, so that :func:`others_changed` can tell it from anyone else's."""
    with _OWN_LOCK:
        since = others_changed(folder, listing(folder))
        yield
        after = listing(folder)
        if after:
            _OWN[folder] = (after, since)


def settle_left(folder: Path, since: int | None, handle: IO[str], full_s: float) -> float:
    """How long a claim just written (open as ``handle``) waits before its first request: what
    is left of ``full_s`` since anyone else last changed the claims folder (``since``, from
    :func:`others_changed`), both times from the disk's own clock, and only on a local disk (a
    network file system may answer from a cached ``stat``; there the whole ``full_s``)."""
    if since is None or not local_disk(folder):
        return full_s
    quiet = (os.fstat(handle.fileno()).st_mtime_ns - since) / 1e9
    return min(full_s, max(0.0, full_s - quiet))


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
