"""Claims: the experiments a running job is calling, so that a second job started on the
same store meanwhile leaves them alone instead of paying for them again (DESIGN.md §5).

A job claims the experiments it is about to call in one file,
``<store>/.claims/<model>/<host>-<pid>-<nonce>.claim``, and holds an exclusive ``flock`` on
that file for as long as it runs. A job that starts later takes a short lock on the model's
claims folder, reads the claims of the jobs still running, lists the store, and claims what
is neither stored nor claimed. The kernel drops a lock when its holder exits or is killed,
so a claim whose lock can be taken belongs to a job that is gone: its experiments are free
again (what it stored is in the store). One file per job, not per experiment.

>>> with claim_experiments(store, "qwen", todo_keys, stored_now) as claim:   # doctest: +SKIP
...     todo = [p for p in todo if p.key not in claim.elsewhere]

Where the file system cannot lock files (a Lustre mount without ``flock``), claims are off
and the job says so once. Exercised by ``pytest tests/test_claims.py``.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from filelock import FileLock, Timeout

FOLDER = ".claims"
CHECK_EVERY_S = 0.1  # how often a running job checks that its claim file is still its own
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
    """Keys this job held until its claim file was removed or replaced and another job took them."""
    _checked: float = 0.0

    def holds(self, key: str) -> bool:
        """Whether this job may call ``key`` now. The claim file is checked (at most every
        :data:`CHECK_EVERY_S`): if someone removed or replaced it, the claim is written
        again at once for what no other job took meanwhile, and the rest is left to them."""
        if key not in self.keys or key in self.lost:
            return False
        if self._handle is not None and self.path is not None and time.monotonic() - self._checked > CHECK_EVERY_S:
            self._checked = time.monotonic()
            if not _same_file(self.path, self._handle):
                self._reassert()
        return key not in self.lost

    def _reassert(self) -> None:
        folder = self.path.parent
        with FileLock(str(folder / ".lock"), timeout=LOCK_TIMEOUT_S):
            others = _running_claims(folder, mine=self._handle)
            taken = {k for k in self.keys if k in others}
            self.lost |= taken
            keep = frozenset(self.keys - self.lost)
            old = self._handle
            self.path, self._handle = _write_claim(folder, keep, self.output_dir)
            old.close()
        print(f"This job's claim file was removed or replaced; claimed again. {len(taken)} experiment(s) another job "
              "took meanwhile are left to it.", file=sys.stderr)

    def release(self) -> None:
        """Give the experiments back (removing the claim file drops its lock)."""
        if self._handle is not None:
            if self.path is not None:
                self.path.unlink(missing_ok=True)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim_experiments(store_root: Path, model: str, wanted: Collection[str], stored: Callable[[], set[str]],
                      output_dir: str | Path = "") -> Claim:
    """Claim the keys of ``wanted`` that are neither stored nor claimed by a running job.

    ``stored`` lists the stored keys; it is called under the lock, after the running
    claims are read, so an experiment another job stored and then let go of is seen as
    stored. The returned claim holds its keys until :meth:`Claim.release` (or the process
    ends); its ``elsewhere`` says which of ``wanted`` other jobs hold.
    """
    folder = Path(store_root).expanduser() / FOLDER / model
    wanted = frozenset(wanted)  # looked up once per held key below: a set, not a list of thousands
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / ".lock"), timeout=LOCK_TIMEOUT_S):
            elsewhere = _running_claims(folder)
            done = stored()
            keys = frozenset(k for k in wanted if k not in done and k not in elsewhere)
            path, handle = _write_claim(folder, keys, output_dir) if keys else (None, None)
    except NotImplementedError:  # filelock: the file system has no flock
        return _unlocked(store_root, wanted, stored)
    except OSError as e:
        if e.errno in _NO_LOCKS:
            return _unlocked(store_root, wanted, stored)
        raise
    except Timeout:
        raise ClaimError(f"Another job has held {folder / '.lock'} for over {LOCK_TIMEOUT_S:g} s; if no job is "
                           "starting on this store, delete that file and run again.") from None
    return Claim(path, keys, {k: h for k, h in elsewhere.items() if k in wanted}, handle, str(output_dir),
                 _checked=time.monotonic())


def _same_file(path: Path, handle: IO[str]) -> bool:
    """Whether ``path`` is still the file ``handle`` holds open (not removed nor replaced)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def _running_claims(folder: Path, mine: IO[str] | None = None) -> dict[str, Holder]:
    """The keys held by running jobs (other than the claim open as ``mine``); the claims of
    jobs that are gone are removed."""
    held: dict[str, Holder] = {}
    for path in folder.glob("*.claim"):
        if mine is not None and _same_file(path, mine):
            continue
        try:
            handle = open(path, encoding="utf-8")
        except FileNotFoundError:  # released meanwhile
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its job runs: its keys are taken
                try:
                    content = json.load(handle)
                    holder = Holder(content["host"], content["pid"], content["started"], content.get("output_dir", ""))
                    held.update(dict.fromkeys(content["keys"], holder))
                except (ValueError, KeyError, TypeError) as e:
                    print(f"Ignoring the unreadable claim {path} ({type(e).__name__}: {e}).", file=sys.stderr)
                continue
            path.unlink(missing_ok=True)  # its job is gone; the lock we hold dies with the handle
    return held


def _write_claim(folder: Path, keys: frozenset[str], output_dir: str | Path) -> tuple[Path, IO[str]]:
    host = socket.gethostname()
    path = folder / f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}.claim"
    handle = open(path, "x", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        json.dump({"host": host, "pid": os.getpid(), "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   "output_dir": str(output_dir), "keys": sorted(keys)}, handle)
        handle.flush()
    except BaseException:
        handle.close()
        path.unlink(missing_ok=True)
        raise
    return path, handle


_warned: set[str] = set()


def _unlocked(store_root: Path, wanted: Collection[str], stored: Callable[[], set[str]]) -> Claim:
    """No locks on this file system: every unstored experiment is this job's, with a warning."""
    if str(store_root) not in _warned:
        _warned.add(str(store_root))
        print(f"The file system of {store_root} cannot lock files, so jobs cannot claim experiments there: two jobs "
              "started at once on the same experiments would both call them.", file=sys.stderr)
    done = stored()
    return Claim(None, frozenset(k for k in wanted if k not in done))
