"""Fail fast across the processes of one sweep: while no reply has told whether a model answers,
one job of the sweep at a time sends to it.

A launcher that runs a sweep's jobs side by side (``submitit_local``, a SLURM array) starts
them before any reply came: each would send its own first requests to a provider that refuses
them all (21 jobs × 3). Here the first job of a model takes a lock beside the sweep's fail-fast
marker (``<sweep>/.fail_fast/<model>.lock``) and holds it until its first reply settles the
model (:attr:`mip.models.fail_fast.FailFast.on_settled`): answered, the marker says so and the
jobs waiting start with the gate open; refused, the marker holds the stop and they send nothing
(:func:`resume`). A job that ends or dies while holding it frees it (the
lock is the process's: ``flock``). Outside a sweep, or once this process saw the model answer,
nothing waits.

>>> import tempfile
>>> from mip.models.fail_fast import FailFast
>>> hold(FailFast("m"), Path(tempfile.mkdtemp()) / "0")    # no sweep: nothing to wait for
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from mip.models.fail_fast import FailFast, ProviderRefused

POLL_S = 0.1


def _marker(output_dir: Path, model: str) -> Path | None:
    """Where a sweep keeps ``model``'s fail-fast state: in the sweep folder (the one with
    Hydra's ``multirun.yaml``); None for a single run."""
    sweep = Path(output_dir).resolve().parent
    return sweep / ".fail_fast" / f"{model}.json" if (sweep / "multirun.yaml").exists() else None


def resume(policy: FailFast, output_dir: Path) -> None:
    """Start from where the sweep's earlier jobs of this model left the count (a job of a small
    sweep may send fewer requests than ``LIMIT``); raise :class:`ProviderRefused` when one of
    them stopped it."""
    path = _marker(output_dir, policy.model)
    if path is None or not path.exists():
        return
    try:
        found = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return
    if found.get("line"):
        raise ProviderRefused(f"{found['line']} (job {found.get('job', '?')}); this job sent nothing", skipped=True)
    policy.in_row, policy.answers = int(found.get("in_row") or 0), int(found.get("answers") or 0)
    if policy.ident is not None and policy.ident in (found.get("open_for") or []):  # answered in another job
        policy.replied = True


def keep(policy: FailFast, output_dir: Path) -> None:
    """Keep the count (and the stop, if any) for the sweep's later jobs of this model."""
    path = _marker(output_dir, policy.model)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # what other jobs of the sweep found stays: a stop, and the model configs that were answered
        found = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        found = {}
    opened = set(found.get("open_for") or []) | ({policy.ident} if policy.replied and policy.ident else set())
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    job = str(output_dir) if policy.tripped or not found.get("line") else found.get("job")
    tmp.write_bytes(orjson.dumps({"model": policy.model, "line": policy.tripped or found.get("line"),
                                  "in_row": policy.in_row, "answers": policy.answers, "open_for": sorted(opened),
                                  "job": job}))
    tmp.replace(path)


class Held:
    """A held lock of a model's first reply in a sweep; :meth:`release` frees it (once)."""

    def __init__(self, fd: int):
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def hold(policy: FailFast, output_dir: Path, stopping: Callable[[], bool] = lambda: False) -> Held | None:
    """Wait until this job may send to ``policy``'s model: at once where the gate is open (this
    process, or the sweep's marker, saw it answer) or outside a sweep; else once this job holds
    the model's first-reply lock (returned: free it with :meth:`Held.release` when the job ends;
    the policy frees it on its first reply), or another job's reply opened the gate (None).
    Raises :class:`mip.models.fail_fast.ProviderRefused` when another job's replies stopped the model."""
    marker = _marker(output_dir, policy.model)
    if marker is None or policy.replied:
        return None
    marker.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(marker.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            resume(policy, output_dir)  # a stop raises; an answer opens the gate
            if policy.replied:
                os.close(fd)
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if stopping():
                    os.close(fd)
                    return None
                time.sleep(POLL_S)
                continue
            resume(policy, output_dir)  # settled while the lock was being taken
            held = Held(fd)
            if policy.replied:
                held.release()
                return None
            policy.on_settled = lambda: (keep(policy, output_dir), held.release())
            return held
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
