"""Progress a person can follow: done/total, rate and ETA, as a tqdm bar on a terminal and as
plain log lines anywhere else.

A tqdm bar redraws itself with carriage returns; in a SLURM log, a file or captured output
that is one long line of half-drawn bars. Where stderr is not a terminal the same counts
go to the log instead (logger ``mip.tracking.progress``, INFO), at most one line every ``interval``
seconds, so a short job writes none and a long one a readable few:

    bar = progress.bar(len(todo), "mock/random", "exp", enabled=cfg.progress)
    for ...: bar.update(1)  # off a terminal, every 30 s: "mock/random: 12/40 exp (00:30, 0.40 exp/s, ETA 01:10)"
    bar.close()             # on a terminal, log lines go above the bar while it is open

A job's bar counts experiments; a batched backend (:mod:`mip.models.hf_local`) adds a bar of
the tokens its batch decodes, so something moves while a batch runs; a sweep logs a line per
finished job (:mod:`mip.entry.hydra_callbacks`).

``python -m pytest tests/test_progress.py`` exercises both, and a job run off a terminal.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import Protocol

from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

log = logging.getLogger("mip.progress")


class Progress(Protocol):
    """What mip's loops use of a tqdm bar."""

    def update(self, n: int = 1) -> object: ...

    def close(self) -> None: ...


def rate_eta(done: float, total: float, elapsed: float, unit: str) -> str:
    """``elapsed, rate, ETA`` as tqdm writes them; ``?`` before anything is done.

    >>> rate_eta(12, 40, 30.0, "exp")
    '00:30, 0.40 exp/s, ETA 01:10'
    >>> rate_eta(3, 21, 600.0, "jobs")
    '10:00, 0.3 jobs/min, ETA 1:00:00'
    >>> rate_eta(0, 2, 5.0, "exp")
    '00:05, ? exp/s, ETA ?'
    """
    if done <= 0 or elapsed <= 0:
        return f"{tqdm.format_interval(elapsed)}, ? {unit}/s, ETA ?"
    per_s = done / elapsed
    rate = (f"{per_s:.2f} {unit}/s" if per_s >= 0.1 else f"{per_s * 60:.1f} {unit}/min" if per_s * 60 >= 0.1
            else f"{per_s * 3600:.1f} {unit}/h")
    return f"{tqdm.format_interval(elapsed)}, {rate}, ETA {tqdm.format_interval(max(total - done, 0) / per_s)}"


def sweep_eta(done: int, total: int, start: float, first_done: float, now: float) -> str:
    """A sweep's progress after ``done`` of ``total`` jobs: elapsed since ``start``, and the rate and
    ETA of the jobs after the first (finished at ``first_done``): the first job's time holds the
    checks before launch and the pools it built, which the next jobs reuse (counted with it, a
    sweep of 1:15 read "ETA 23:00" after its first job).

    >>> sweep_eta(1, 21, 0.0, 25.0, 25.0)
    '00:25, ETA after the next job'
    >>> sweep_eta(3, 21, 0.0, 25.0, 27.0)
    '00:27, 1.00 jobs/s, ETA 00:18'
    """
    if done < 2 or now <= first_done:
        return f"{tqdm.format_interval(now - start)}, ETA after the next job"
    after = rate_eta(done - 1, total - 1, now - first_done, "jobs").split(", ", 1)[1]
    return f"{tqdm.format_interval(now - start)}, {after}"


class Lines:
    """tqdm's ``update`` and ``close`` as log lines with done/total, rate and ETA: one when
    ``interval`` seconds have passed since the last, and a last one on close if any was written."""

    def __init__(self, total: int, desc: str, unit: str, interval: float = 30.0):
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.n, self.said = 0, -1
        self.start = self.last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self.last >= self.interval:
            self.say()

    def close(self) -> None:
        if 0 <= self.said < self.n:
            self.say()

    def say(self) -> None:
        self.last, self.said = time.monotonic(), self.n
        log.info("%s: %d/%d %s (%s)", self.desc, self.n, self.total, self.unit,
                 rate_eta(self.n, self.total, self.last - self.start, self.unit))


class Bar(tqdm):
    """A tqdm bar; while it is open, log lines to the terminal are written above it (tqdm's
    ``logging_redirect_tqdm``) instead of through it."""

    def __init__(self, *args, redirect: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self._redirect: contextlib.AbstractContextManager | None = None
        if redirect and not self.disable:
            self._redirect = logging_redirect_tqdm(tqdm_class=tqdm)
            self._redirect.__enter__()

    def close(self) -> None:
        try:
            super().close()
        finally:
            redirect, self._redirect = getattr(self, "_redirect", None), None
            if redirect is not None:
                redirect.__exit__(None, None, None)


def bar(total: int, desc: str, unit: str, enabled: bool = True, interval: float = 30.0, leave: bool = True) -> Progress:
    """A tqdm bar on stderr when stderr is a terminal, else :class:`Lines`; a silent bar
    when not ``enabled`` (``progress=false``). ``leave=False``: a bar under another one (a
    batch's tokens under its job's experiments), wiped when closed; the outer bar redirects the log."""
    if enabled and not sys.stderr.isatty():
        return Lines(total, desc, unit, interval)
    return Bar(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, leave=leave, redirect=leave,
               dynamic_ncols=True)
