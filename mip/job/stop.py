"""A drained stop: on SIGTERM (how SLURM stops a job), SIGINT (Ctrl-C) or the signal submitit
sends before a time limit or a preemption (``SIGUSR2``, or ``SUBMITIT_PREEMPT_SIGNAL``), a job
sends nothing new, waits up to ``stop_grace_s`` for the replies already in flight, stores them,
writes its manifest and exits non-zero; the same command run again (or submitit's requeue)
carries on from what is stored. The same signal again, or Ctrl-C, ends the wait at once:
what is still in flight is dropped (and paid again by the rerun).

The default grace (20 s) ends inside SLURM's ``KillWait`` (30 s between SIGTERM and SIGKILL by
default) and submitit's ``signal_delay_s`` (90 s; 120 s in Hydra's submitit launcher). Under
submitit the handler it installed is kept and called once the job has drained, so submitit
checkpoints and requeues as it would have.

>>> with Drain(grace_s=20) as stop:                        # doctest: +SKIP
...     loop.run(todo)                                     # pulls nothing once stop.requested
>>> stop.hand_over()                                       # doctest: +SKIP

Exercised by ``pytest tests/test_stop.py``; ``benchmarks/stops.py`` measures ten stops.

>>> stop_signals()[:2] == [signal.SIGTERM, signal.SIGINT]
True
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

DEFAULT_GRACE_S = 20.0


class Stopped(BaseException):
    """The grace period ran out, or a second signal came: the replies still in flight are
    dropped. A BaseException, so no retry wrapper mistakes it for a failed call."""


class JobStopped(Exception):
    """A job that stopped on a signal after draining; the message says what was kept."""

    def __init__(self, message: str, drain: Drain):
        super().__init__(message)
        self.drain = drain


def stop_signals() -> list[signal.Signals]:
    """SIGTERM, SIGINT and the preemption signal submitit asks SLURM to send."""
    name = "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2")
    preempt = getattr(signal, name, signal.SIGUSR2)
    return list(dict.fromkeys([signal.SIGTERM, signal.SIGINT, signal.Signals(preempt)]))


class Drain:
    """The stop state of one job. Inert where handlers cannot be installed (not the main thread)."""

    def __init__(self, grace_s: float = DEFAULT_GRACE_S):
        self.grace_s = grace_s
        self.received: list[signal.Signals] = []
        self.on_stop: list[Callable[[], None]] = []
        """Called once, in the signal handler, when the stop begins (a backend stops sending)."""
        self.expired = False
        self.done = False
        """The calls are over: a signal now is only noted (the manifest is being written)."""
        self._previous: dict[int, Any] = {}
        self._shielded = 0
        self._pending = False

    @property
    def requested(self) -> bool:
        return bool(self.received)

    def __enter__(self) -> Drain:
        if threading.current_thread() is threading.main_thread():
            for signum in [*stop_signals(), signal.SIGALRM]:
                handler = self._expire if signum == signal.SIGALRM else self._signal
                self._previous[signum] = signal.signal(signum, handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous:
            signal.setitimer(signal.ITIMER_REAL, 0)
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)

    def finished(self) -> None:
        """The calls are over: the grace timer is off, and a signal no longer interrupts."""
        self.done = True
        if self._previous:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _signal(self, signum: int, frame: Any) -> None:
        sig = signal.Signals(signum)
        if self.done:
            self.received.append(sig)
            return
        if self.received and (sig in self.received or sig == signal.SIGINT):
            print(f"{sig.name} again: stopping now; the replies still in flight are dropped.", file=sys.stderr,
                  flush=True)
            self._raise()
            return
        first = not self.received
        self.received.append(sig)
        if not first:  # SLURM may follow the preemption signal with SIGTERM: one drain for both
            return
        print(f"{sig.name}: sending nothing new, storing the replies in flight (up to {self.grace_s:g} s), then "
              f"stopping; {sig.name} again or Ctrl-C stops at once.", file=sys.stderr, flush=True)
        for hook in self.on_stop:
            hook()
        if self.grace_s > 0:
            signal.setitimer(signal.ITIMER_REAL, self.grace_s)
        else:
            self._raise()

    def _expire(self, signum: int, frame: Any) -> None:
        if self.done:
            return
        self.expired = True
        print(f"The grace period of {self.grace_s:g} s is over: the replies still in flight are dropped.",
              file=sys.stderr, flush=True)
        self._raise()

    def _raise(self) -> None:
        if self._shielded:  # a record being written is finished first
            self._pending = True
            return
        raise Stopped

    @contextlib.contextmanager
    def shielded(self) -> Iterator[None]:
        """A section a stop must not cut in half (a record written, the store flushed)."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1
            if not self._shielded and self._pending:
                self._pending = False
                raise Stopped

    @property
    def exit_code(self) -> int:
        """The shell's code for a process ended by the first signal (143 for SIGTERM)."""
        return 128 + int(self.received[0]) if self.received else 1

    def hand_over(self) -> None:
        """After the manifest is written: give each signal received to the handler that was
        there before (submitit's checkpoint and requeue; it exits), then exit non-zero."""
        for sig in self.received:
            previous = self._previous.get(sig)
            if callable(previous) and previous is not signal.default_int_handler:
                previous(int(sig), None)
        sys.exit(self.exit_code)
