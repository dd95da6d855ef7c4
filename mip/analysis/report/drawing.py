"""Figures drawn and encoded in worker processes while the report computes its tables: encoding a
figure as PNG and PDF is most of a report's time, and each figure is drawn on its own, so the
machine's cores share them.

>>> from mip.analysis.report.figures import Later, no_data
>>> with Drawing(workers=1) as drawing:
...     drawing.add(Later(no_data, ("Fig. 2",), {}), Path("figures"), "fig2")
...     drawing.results()
[Missing(reason='Fig. 2: no data to draw.')]

Exercised by ``pytest tests/test_report_scale.py``.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, wait
from pathlib import Path

from mip.analysis.report import figures

#: Worker processes (None: one per core this process may run on; 1: drawn here, one after another).
WORKERS: int | None = None


def draw(later: figures.Later, folder: Path, name: str) -> list[Path] | figures.Missing:
    """Draw ``later`` and encode it under ``folder`` as ``name`` (:func:`mip.analysis.report.figures.save`);
    a figure with nothing to draw comes back as its :class:`~mip.analysis.report.figures.Missing`."""
    fig = later()
    return fig if isinstance(fig, figures.Missing) else figures.save(fig, folder, name)


def _worker(parent: int) -> None:
    """A worker leaves Ctrl-C to the report's process, which says it in one line and stops the workers;
    it ends with that process, however that ends (a kill leaves no worker waiting for figures)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # Linux: a signal when the parent ends (PR_SET_PDEATHSIG)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before that was set
        os._exit(1)


class Drawing:
    """The figures handed over (:meth:`add`), drawn by ``workers`` processes (forked when the first
    figure comes, so that they start with the analysis's modules loaded), or here when it is 1."""

    def __init__(self, workers: int | None = None, say: Callable[[str], None] | None = None, every: float = 10.0):
        self.workers = workers or WORKERS or len(os.sched_getaffinity(0))
        self.say, self.every = say or (lambda line: None), every
        self.pool: ProcessPoolExecutor | None = None
        self.jobs: list[Future | list[Path] | figures.Missing] = []

    def __enter__(self) -> Drawing:
        return self

    def __exit__(self, *error) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def add(self, later: figures.Later, folder: Path, name: str) -> None:
        if self.workers == 1:
            self.jobs.append(draw(later, folder, name))
            return
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.workers, multiprocessing.get_context("fork"), initializer=_worker,
                                            initargs=(os.getpid(),))
        self.jobs.append(self.pool.submit(draw, later, folder, name))

    def results(self) -> list[list[Path] | figures.Missing]:
        """What each figure handed over since the last call became, in the order they were: its files, or
        why it is not drawn. A line at least every ``every`` seconds while figures are still being drawn."""
        jobs, self.jobs = self.jobs, []
        futures = [job for job in jobs if isinstance(job, Future)]
        start, pending = time.monotonic(), {f for f in futures if not f.done()}
        before = len(futures) - len(pending)
        while pending:
            _, pending = wait(pending, timeout=self.every)
            if pending:
                done, spent = len(futures) - len(pending), time.monotonic() - start
                eta = len(pending) * spent / (done - before) if done > before else float("nan")
                self.say(f"figures: {done}/{len(futures)} drawn ({spent:.0f} s, ETA {eta:.0f} s)")
        return [job.result() if isinstance(job, Future) else job for job in jobs]
