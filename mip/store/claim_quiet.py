"""How long a new claim waits before its first request (its settle): what is left of
:data:`mip.store.claims.SETTLE_S` of time in which a running job whose claim file was removed
could have written it again. That job needs the claims folder's lock to do so, so the time runs
from the last change anyone else made to the folder (its modification time) or the last time
another process let go of the lock (the lock file's time stamp, set by every holder as it lets
go), less the time this process has held the lock since.

This process's own changes (its claim files written and removed) and its own holds are told
apart from everyone else's: the jobs of a sweep run one after another in one process, and the
claim file the last one removed hid no one's. A change counts as this process's own only where
no other claim file came or went meanwhile, and the folder is taken to be as this process left
it only where its claim files are too (on kernels before 6.13 the disk's clock ticks every few
milliseconds, and a change in the tick right after one of this process's keeps its time stamp).

>>> Quiet(since=5_000_000_000, held_s=0.1).free_s(written=5_400_000_000, holding_s=0.05)
0.25
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from mip.data.files import local_disk
from mip.store.claim_files import listing

LOCK = ".lock"


@dataclass(frozen=True)
class Quiet:
    """When someone else last changed a claims folder or let go of its lock, and since then."""

    since: int | None
    """The latest time (the disk's clock, ns) by which someone other than this process may have
    changed the folder or held its lock; None where that cannot be told (the folder is missing
    or was changing)."""
    held_s: float = 0.0
    """How long this process has held the folder's lock since then."""

    def free_s(self, written: int, holding_s: float) -> float:
        """Seconds until ``written`` (the disk's clock, ns) in which a running job could have taken
        the lock, this process holding it ``holding_s`` now."""
        return round((written - self.since) / 1e9 - self.held_s - holding_s, 9)


#: Per claims folder: its listing and claim files as this process last left it or looked at it
#: under the lock, and what was known then of everyone else.
_OWN: dict[Path, tuple[tuple, frozenset[str], Quiet]] = {}
#: Per claims folder: the lock file's time stamp as this process last set it.
_STAMPS: dict[Path, int] = {}
_MUTEX = threading.Lock()


def others_changed(folder: Path, seen: tuple) -> Quiet:
    """What this process knows of everyone else's changes to the claims folder that
    :func:`mip.store.claim_files.listing` read as ``seen``: where ``seen`` is the folder as this
    process last left it (its time stamp and its claim files: a change in the same tick of a
    coarse clock keeps the stamp), its own changes and holds do not count."""
    return _known(folder, seen, _claim_names(folder))


def _known(folder: Path, seen: tuple, names: frozenset[str]) -> Quiet:
    """:func:`others_changed`, the folder's claim files (``names``) already listed."""
    if not seen:
        return Quiet(None)
    own = _OWN.get(folder)
    return own[2] if own is not None and own[0] == seen and own[1] == names else Quiet(seen[1])


@contextmanager
def holding(folder: Path, timeout: float) -> Iterator[float]:
    """The claims folder's lock, held; yields when it was taken (``time.monotonic``). Taking it,
    the lock file's stamp says when another process last let go of it; letting go, this process
    stamps it and counts the time it held it (every hold of the lock goes through here)."""
    with FileLock(str(folder / LOCK), timeout=timeout):
        taken = time.monotonic()
        _taken(folder)
        try:
            yield taken
        finally:
            _let_go(folder, time.monotonic() - taken)


def _stamp(folder: Path) -> int | None:
    try:
        return os.stat(folder / LOCK).st_mtime_ns
    except OSError:
        return None


def _taken(folder: Path) -> None:
    with _MUTEX:
        stamp = _stamp(folder)
        if stamp is None or stamp == _STAMPS.get(folder):
            return
        seen, names = listing(folder), _claim_names(folder)
        quiet = _known(folder, seen, names)
        if quiet.since is not None and stamp > quiet.since:  # another process held it after: the time runs from then
            _OWN[folder] = (seen, names, Quiet(stamp))


def _let_go(folder: Path, held_s: float) -> None:
    with _MUTEX:
        try:
            os.utime(folder / LOCK)
            _STAMPS[folder] = os.stat(folder / LOCK).st_mtime_ns
        except OSError:  # a lock file of another user's: this process's holds still count below
            pass
        seen, names = listing(folder), _claim_names(folder)
        quiet = _known(folder, seen, names)
        _OWN[folder] = (seen, names, Quiet(quiet.since, quiet.held_s + held_s))


def _claim_names(folder: Path) -> frozenset[str]:
    try:
        return frozenset(name for name in os.listdir(folder) if name.endswith(".claim"))
    except FileNotFoundError:
        return frozenset()


@contextmanager
def own_change(folder: Path, name: str, quiet: Quiet | None = None) -> Iterator[None]:
    """Write or remove this process's own claim file ``name`` in the claims folder, and remember
    what the change left, so that :func:`others_changed` can tell it from anyone else's.
    ``quiet``: what was known before the change (default: what the folder says now). Where any
    other claim file came or went meanwhile, nothing is remembered: the next claim counts from
    the folder's own time."""
    with _MUTEX:
        names = _claim_names(folder)  # first: a change between the two looks moves the time stamp
        quiet = _known(folder, listing(folder), names) if quiet is None else quiet
        yield
        after, now = listing(folder), _claim_names(folder)  # the time stamp first, then the names
        if after and names ^ now <= {name}:
            _OWN[folder] = (after, now, quiet)
        else:
            _OWN.pop(folder, None)


def settle_left(folder: Path, quiet: Quiet, written: int, taken: float, full_s: float) -> float:
    """How long a claim written at ``written`` (the disk's clock, ns), under the lock taken at
    ``taken``, waits before its first request: what is left of ``full_s`` (see the module's text).
    Only on a local disk: a network file system may answer from a cached ``stat``, so there the
    whole ``full_s``."""
    if quiet.since is None or not local_disk(folder):
        return full_s
    return min(full_s, max(0.0, full_s - quiet.free_s(written, time.monotonic() - taken)))
