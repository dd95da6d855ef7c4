"""Progress a person can follow: a tqdm bar on a terminal, plain log lines anywhere else.

A tqdm bar redraws itself with carriage returns; in a SLURM log, a file or captured output
that is one long line of half-drawn bars. Where stderr is not a terminal the same counts
go to the log instead (logger ``mip.progress``, INFO), at most one line every ``interval``
seconds, so a short job writes none and a long one a readable few:

    bar = progress.bar(len(todo), "mock/random", "exp", enabled=cfg.progress)
    for ...: bar.update(1)      # off a terminal, every 30 s: "mock/random: 12/40 exp (30 s)"
    bar.close()

``python -m pytest tests/test_progress.py`` exercises both, and a job run off a terminal.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Protocol

from tqdm.auto import tqdm

log = logging.getLogger("mip.progress")


class Progress(Protocol):
    """What mip's loops use of a tqdm bar."""

    def update(self, n: int = 1) -> object: ...

    def close(self) -> None: ...


class Lines:
    """tqdm's ``update`` and ``close`` as log lines: one when ``interval`` seconds have
    passed since the last, and a last one on close if any was written."""

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
        log.info("%s: %d/%d %s (%.0f s)", self.desc, self.n, self.total, self.unit, self.last - self.start)


def bar(total: int, desc: str, unit: str, enabled: bool = True, interval: float = 30.0) -> Progress:
    """A tqdm bar on stderr when stderr is a terminal, else :class:`Lines`; a silent bar
    when not ``enabled`` (``progress=false``)."""
    if enabled and not sys.stderr.isatty():
        return Lines(total, desc, unit, interval)
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr)
