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
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Quiet:
    """What a claims folder's time stamp says about when someone else last changed it."""

    since: int | None
    """The latest time (the disk's clock, ns) by which someone other than this process may have
    changed the folder; None where that cannot be told (the folder is missing or was changing)."""
    held_s: float = 0.0
    """How long this process has held the folder's lock since then: time in which a running job
    whose claim was removed could not have written it again (it needs that lock)."""


#: Per claims folder: its listing and claim files right after this process's own last change to
#: it (a claim written or released), and what was known then of everyone else's changes. A
#: sweep's jobs run one after another in one process; each release changes the folder, and
#: without this the next job would wait its settle for a change that hides no one's claim.
_OWN: dict[Path, tuple[tuple, Quiet]] = {}
_OWN_LOCK = threading.Lock()


def others_changed(folder: Path, seen: tuple) -> Quiet:
    """When someone other than this process last changed the claims folder that :func:`listing`
    read as ``seen``. Where ``seen`` is just what this process's own last change left, that change
    does not count: removing or writing its own claim hides no running job's."""
    if not seen:
        return Quiet(None)
    own = _OWN.get(folder)
    return own[1] if own is not None and own[0] == seen else Quiet(seen[1])


def _claim_names(folder: Path) -> frozenset[str]:
    try:
        return frozenset(name for name in os.listdir(folder) if name.endswith(".claim"))
    except FileNotFoundError:
        return frozenset()


@contextmanager
def own_change(folder: Path, name: str, locked_at: float | None = None, fresh: bool = False) -> Iterator[None]:
    """Write or remove this process's own claim file ``name`` in the claims folder, and remember
    what the change left, so that :func:`others_changed` can tell it from anyone else's.

    ``locked_at``: when (``time.monotonic``) this process took the folder's lock for the change.
    ``fresh``: this process made the folder (its store) just now, so no one else changed it.
    Where any other claim file came or went meanwhile, nothing is remembered: the next claim
    counts from the folder's own time. (On kernels before 6.13 the disk's clock ticks every few
    milliseconds, and a change by someone else in the tick right after this one, once it was
    looked at, keeps the same time stamp: it would be taken for this one.)"""
    with _OWN_LOCK:
        names = _claim_names(folder)  # first: a change between the two looks moves the time stamp
        quiet = Quiet(0) if fresh else others_changed(folder, listing(folder))
        yield
        after = listing(folder)
        if after and names ^ _claim_names(folder) <= {name}:  # the time stamp first, then the names
            held = quiet.held_s + (time.monotonic() - locked_at if locked_at is not None else 0.0)
            _OWN[folder] = (after, Quiet(quiet.since, held))
        else:
            _OWN.pop(folder, None)


def settle_left(folder: Path, quiet: Quiet, handle: IO[str], locked_at: float, full_s: float) -> float:
    """How long a claim just written (open as ``handle``, under the folder's lock taken at
    ``locked_at``) waits before its first request: what is left of ``full_s`` of time in which a
    running job could have written a removed claim again — since anyone else last changed the
    claims folder (``quiet``), by the disk's own clock, less the time this process held the
    folder's lock since then, this time included. Only on a local disk: a network file system
    may answer from a cached ``stat``, so there the whole ``full_s``."""
    if quiet.since is None or not local_disk(folder):
        return full_s
    free = (os.fstat(handle.fileno()).st_mtime_ns - quiet.since) / 1e9 - quiet.held_s - (time.monotonic() - locked_at)
    return min(full_s, max(0.0, full_s - free))


def same_file(path: Path, handle: IO[str]) -> bool:
    """Whether ``path`` is still the file ``handle`` holds open (not removed nor replaced)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def claim_path(folder: Path) -> Path:
    """A new claim file's name in ``folder``: its host, process and a nonce."""
    return folder / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.claim"


def write_claim(path: Path, keys: frozenset[str], output_dir: str | Path, since: tuple[float, str]) -> IO[str]:
    """The new claim file ``path`` of this job, locked and written: its open handle (the lock lives with it)."""
    host = socket.gethostname()
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
    return handle
