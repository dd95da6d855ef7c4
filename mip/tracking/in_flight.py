"""A job that waits on a slow server says so: while requests are in flight, a line at least
every ``interval`` seconds (``progress_interval_s``, 30 s by default) with how many are in
flight, how long the oldest has waited, and the experiments done so far with their rate and ETA
(logger ``mip.progress``, as :mod:`mip.tracking.progress`'s lines):

    mock/random: 4 request(s) in flight, the oldest for 00:41; 0/40 exp done (00:41, ? exp/s, ETA ?)

A progress line of the job's bar counts as said: the heartbeat speaks only after ``interval``
seconds of silence, so a job whose experiments land often writes what it wrote before.

    waiting = InFlight()
    with Heartbeat(bar, waiting, interval=30.0, desc="mock/random"):
        ...  waiting.sent(request.id) as a request goes out, waiting.landed(request.id) as it comes back

>>> waiting = InFlight()
>>> waiting.sent("r1", now=10.0); waiting.sent("r2", now=12.0); waiting.landed("r1")
>>> waiting.snapshot(now=42.0)
(1, 30.0)
>>> due(last=0.0, now=29.9, interval=30.0), due(last=0.0, now=30.0, interval=30.0)
(False, True)

Exercised by ``pytest tests/test_in_flight.py``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from tqdm import tqdm

from mip.tracking.progress import rate_eta

log = logging.getLogger("mip.progress")


class InFlight:
    """The requests a job has sent and not yet had back, with when each went out (thread-safe:
    a backend may pull requests on its own thread)."""

    def __init__(self) -> None:
        self._sent: dict[str, float] = {}
        self._lock = threading.Lock()

    def sent(self, request_id: str, now: float | None = None) -> None:
        with self._lock:
            self._sent[request_id] = time.monotonic() if now is None else now

    def landed(self, request_id: str) -> None:
        with self._lock:
            self._sent.pop(request_id, None)

    def forget(self, request_ids: Iterable[str]) -> None:
        """Requests no longer waited on (given up, or dropped at a stop)."""
        with self._lock:
            for request_id in request_ids:
                self._sent.pop(request_id, None)

    def snapshot(self, now: float | None = None) -> tuple[int, float | None]:
        """How many are in flight, and how long the oldest has been (None: none is)."""
        with self._lock:
            oldest = min(self._sent.values(), default=None)
            count = len(self._sent)
        now = time.monotonic() if now is None else now
        return count, None if oldest is None else now - oldest


def due(last: float, now: float, interval: float) -> bool:
    """A heartbeat line is due: ``interval`` seconds have passed since the last line."""
    return now - last >= interval


class Heartbeat:
    """A thread that, while ``waiting`` has requests in flight, logs a line whenever ``interval``
    seconds have passed since the last line (its own, or the bar's: :class:`progress.Lines`
    keeps ``last``). Use as a context manager around the calls."""

    def __init__(self, bar: object, waiting: InFlight, interval: float, desc: str):
        self.bar, self.waiting, self.interval, self.desc = bar, waiting, interval, desc
        self.start = self.last = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mip-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _said(self) -> float:
        """When the last line was said, the bar's included."""
        return max(self.last, getattr(self.bar, "last", self.last))

    def _run(self) -> None:
        wait = self.interval
        while not self._stop.wait(wait):
            now = time.monotonic()
            count, oldest = self.waiting.snapshot(now)
            if count and due(self._said(), now, self.interval):
                self.say(count, oldest or 0.0, now)
            # in flight: wake when the next line is due; else look again within a second
            wait = max(0.05, self._said() + self.interval - now) if count else min(self.interval, 1.0)

    def say(self, count: int, oldest: float, now: float) -> None:
        self.last = now
        done, total = int(getattr(self.bar, "n", 0)), int(getattr(self.bar, "total", 0) or 0)
        log.info("%s: %d request(s) in flight, the oldest for %s; %d/%d exp done (%s)", self.desc, count,
                 tqdm.format_interval(oldest), done, total, rate_eta(done, total, now - self.start, "exp"))
