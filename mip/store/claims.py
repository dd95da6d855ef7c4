"""Claims: the experiments a running job is calling, so that a second job started on the
same store meanwhile leaves them alone instead of paying for them again (docs/store.md).

A job claims the experiments it is about to call in one file,
``<store>/.claims/<model>/<host>-<pid>-<nonce>.claim``, holds an exclusive ``flock`` on it
for as long as it runs, and keeps it alive from a thread of its own, also while every request
is in flight: every :data:`CHECK_EVERY_S` it checks that the file is still its own (removed,
replaced, or its whole folder deleted: it writes the claim again at once) and every
:data:`BEAT_S` it refreshes the file's modification time (a heartbeat).

A job that starts later takes a short lock on the model's claims folder, reads the claims of
the jobs still running, lists the store, and claims what is neither stored nor claimed. A
claim is *live* while its lock is held, or, where locks do not reach across machines (a
Lustre ``localflock`` mount), while it was written on another host and its heartbeat is
younger than :data:`STALE_S`; any other claim belongs to a job that is gone, and the next job
removes it (what that job stored is in the store). Where two live claims name the same
experiment (a claim file was deleted and a new job claimed before the running one wrote its
claim again), the older claim keeps it: the younger job waits up to :data:`SETTLE_S` before
its first request and checks, and its heartbeat keeps checking, so it sends none of them.

That wait is needed only where a running job's claim may be missing from the folder: where
a claim file went, or the folder was made, within the last :data:`SETTLE_S` of time in which
that job could have written it again (it needs the folder's lock, so time in which the lock
was held does not count), and then only for what is left of it. A job skips it (its first
request goes out at once) where it claims in a store it made itself (nothing ran there), or
on a local disk whose claims folder no one else changed in that time nor while it was read
(its modification time, on the disk's own clock, says so; a network file system may serve
that time from a cache, so there every job waits). This process's own changes do not count
(:mod:`mip.store.claim_quiet`): the jobs of a sweep run one after another in one process,
and the claim file the last one removed hid no one's.

>>> with claim_experiments(store, "qwen", todo_keys, stored_now) as claim:   # doctest: +SKIP
...     todo = [p for p in todo if p.key not in claim.elsewhere]

Where the file system cannot lock files (a Lustre mount without ``flock``), claims are off
and the job says so once. Exercised by ``pytest tests/test_claims.py``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from filelock import Timeout

from mip.store.claim_files import claim_path, listing, same_file, write_claim
from mip.store.claim_quiet import Quiet, holding, others_changed, own_change, settle_left

FOLDER = ".claims"
CHECK_EVERY_S = 0.1  # how often a running job checks that its claim file is still its own
BEAT_S = 5.0  # how often a running job refreshes its claim file's modification time
STALE_S = 60.0  # a claim from another host whose lock is free counts as live this long after its last beat
SETTLE_S = 4 * CHECK_EVERY_S  # a new claim's wait before its first request: a running job's check comes first
LOCK_TIMEOUT_S = 600.0  # many jobs of a sweep may start at once; each holds the lock briefly
_NO_LOCKS = (errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL)


class ClaimError(RuntimeError):
    """The claims folder stays locked; the message says what to do."""


@dataclass
class Holder:
    """A running job that holds a claim, as its claim file describes it."""

    host: str
    pid: int
    started: str
    output_dir: str
    since: tuple[float, str] = (0.0, "")
    """When the claim was first made, and its file's first name: the older claim keeps a key two name."""

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}, output in {self.output_dir}"


@dataclass
class Claim:
    """This job's claim; ``elsewhere`` maps the experiments other running jobs hold to them."""

    path: Path | None
    keys: frozenset[str]
    elsewhere: dict[str, Holder] = field(default_factory=dict)
    _handle: IO[str] | None = None
    output_dir: str = ""
    lost: set[str] = field(default_factory=set)
    """Keys this job held until an older live claim turned out to hold them too: left to it."""
    since: tuple[float, str] = (0.0, "")
    sent: set[str] = field(default_factory=set)
    """Keys :meth:`holds` let go out: this job keeps them whatever happens to the files."""
    settle: float = SETTLE_S
    """How long the first request waits, at most :data:`SETTLE_S` (see the module's notes)."""

    def __post_init__(self) -> None:
        self._mutex = threading.RLock()
        self._stop = threading.Event()
        self._settle_until = time.monotonic() + self.settle if self.settle else 0.0
        self._seen: tuple = ()
        self._beat = time.monotonic()
        self._warned = False
        self._thread: threading.Thread | None = None
        if self._handle is not None:
            self._thread = threading.Thread(target=self._heartbeat, name="mip-claim", daemon=True)
            self._thread.start()

    def holds(self, key: str) -> bool:
        """Whether this job may call ``key`` now; a key it says yes to stays this job's."""
        if key not in self.keys:
            return False
        if self._thread is not None and self._settle_until:
            time.sleep(max(0.0, self._settle_until - time.monotonic()))
            self._settle_until = 0.0
            self._tick(scan=True)
        with self._mutex:
            if key in self.lost:
                return False
            self.sent.add(key)
            return True

    def _heartbeat(self) -> None:
        while not self._stop.wait(CHECK_EVERY_S):
            try:
                self._tick()
            except (OSError, Timeout) as e:  # a store gone read-only or away: the next tick tries again
                if not self._warned:
                    print(f"Could not check this job's claim ({type(e).__name__}: {e}).", file=sys.stderr)
                self._warned = True

    def _tick(self, scan: bool = False) -> None:
        with self._mutex:
            if self._handle is None or self.path is None:
                return
            folder = self.path.parent
            if not same_file(self.path, self._handle):
                self._reassert(folder)
            elif scan or self._seen != listing(folder):
                with holding(folder, LOCK_TIMEOUT_S):
                    self._seen = listing(folder)
                    self._yield_to_older(_running_claims(folder, mine=self._handle))
            if time.monotonic() - self._beat > BEAT_S:
                os.utime(self._handle.fileno())
                self._beat = time.monotonic()

    def _yield_to_older(self, others: dict[str, Holder]) -> set[str]:
        """Leave to an older live claim the keys it names too that this job has not sent."""
        older = {k for k in self.keys - self.lost - self.sent if k in others and others[k].since < self.since}
        self.lost |= older
        self.elsewhere.update((k, others[k]) for k in older)
        return older

    def _reassert(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with holding(folder, LOCK_TIMEOUT_S):
            taken = self._yield_to_older(_running_claims(folder, mine=self._handle))
            old = self._handle
            self.path = claim_path(folder)
            self._handle = write_claim(self.path, frozenset(self.keys - self.lost), self.output_dir, self.since)
            old.close()
            self._seen = listing(folder)
        print(f"This job's claim file was removed or replaced; claimed again. {len(taken)} experiment(s) an older "
              "running job also claims are left to it.", file=sys.stderr)

    def release(self) -> None:
        """Give the experiments back (removing the claim file drops its lock)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._mutex:
            if self._handle is not None:
                if self.path is not None and same_file(self.path, self._handle):
                    with own_change(self.path.parent, self.path.name):
                        self.path.unlink(missing_ok=True)
                self._handle.close()
                self._handle = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim_experiments(store_root: Path, model: str, wanted: Collection[str], stored: Callable[[], set[str]],
                      output_dir: str | Path = "", new_store: bool = False) -> Claim:
    """Claim the keys of ``wanted`` that are neither stored nor claimed by a running job.

    ``stored`` lists the stored keys; it is called under the lock, after the running
    claims are read, so an experiment another job stored and then let go of is seen as
    stored. The returned claim holds its keys until :meth:`Claim.release` (or the process
    ends); its ``elsewhere`` says which of ``wanted`` other jobs hold. ``new_store``: the
    caller made the store folder itself, so no job ran there (its claim needs no settle).
    """
    folder = Path(store_root).expanduser() / FOLDER / model
    wanted = frozenset(wanted)  # looked up once per held key below: a set, not a list of thousands
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with holding(folder, LOCK_TIMEOUT_S) as taken:
            before = listing(folder)
            elsewhere = _running_claims(folder)
            done = stored()
            keys = frozenset(k for k in wanted if k not in done and k not in elsewhere)
            since = (time.time(), uuid.uuid4().hex)
            still = listing(folder) == before  # no claim went nor came while they were read
            quiet = others_changed(folder, before) if still else Quiet(None)
            path, handle, settle = None, None, 0.0
            if keys:
                path = claim_path(folder)
                with own_change(folder, path.name, Quiet(0) if new_store else quiet):  # a new store: no one else
                    handle = write_claim(path, keys, output_dir, since)
                if not new_store:
                    settle = settle_left(folder, quiet, os.fstat(handle.fileno()).st_mtime_ns, taken, SETTLE_S)
    except NotImplementedError:  # filelock: the file system has no flock
        return _unlocked(store_root, wanted, stored)
    except OSError as e:
        if e.errno in _NO_LOCKS:
            return _unlocked(store_root, wanted, stored)
        raise
    except Timeout:
        raise ClaimError(f"Another job has held {folder / '.lock'} for over {LOCK_TIMEOUT_S:g} s; if no job is "
                         "starting on this store, delete that file and run again.") from None
    return Claim(path, keys, {k: h for k, h in elsewhere.items() if k in wanted}, handle, str(output_dir), since=since,
                 settle=settle)


def _running_claims(folder: Path, mine: IO[str] | None = None) -> dict[str, Holder]:
    """The keys held by live claims (other than the claim open as ``mine``); the claims of
    jobs that are gone are removed."""
    held: dict[str, Holder] = {}
    for path in folder.glob("*.claim"):
        if mine is not None and same_file(path, mine):
            continue
        try:
            handle = open(path, encoding="utf-8")
        except FileNotFoundError:  # released meanwhile
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = False
            except BlockingIOError:  # its job runs on a host whose locks we see
                locked = True
            try:
                content = json.load(handle)
                holder = Holder(content["host"], content["pid"], content["started"], content.get("output_dir", ""),
                                tuple(content.get("since", (0.0, ""))))
            except (ValueError, KeyError, TypeError) as e:
                if locked:
                    print(f"Ignoring the unreadable claim {path} ({type(e).__name__}: {e}).", file=sys.stderr)
                    continue
                holder = None
            if locked or (holder is not None and _beating(holder, handle)):
                held.update(dict.fromkeys(content["keys"], holder))
                continue
            path.unlink(missing_ok=True)  # its job is gone; the lock we hold dies with the handle
    return held


def _beating(holder: Holder, handle: IO[str]) -> bool:
    """Whether an unlocked claim may still be live: written on another host (whose locks may not
    reach here) with a recent heartbeat. On this host a free lock means its job is gone."""
    if holder.host == socket.gethostname():
        return False
    return time.time() - os.fstat(handle.fileno()).st_mtime < STALE_S


_warned: set[str] = set()


def _unlocked(store_root: Path, wanted: Collection[str], stored: Callable[[], set[str]]) -> Claim:
    """No locks on this file system: every unstored experiment is this job's, with a warning."""
    if str(store_root) not in _warned:
        _warned.add(str(store_root))
        print(f"The file system of {store_root} cannot lock files, so jobs cannot claim experiments there: two jobs "
              "started at once on the same experiments would both call them.", file=sys.stderr)
    done = stored()
    return Claim(None, frozenset(k for k in wanted if k not in done))
