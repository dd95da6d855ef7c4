"""Python's cycle collector while a job calls: it collects the youngest generation every
10,000 container allocations instead of every 700.

Each experiment makes a few hundred short-lived containers (request, reply, attempt and
record objects, asyncio's tasks and futures) and keeps lists of its 2,000 texts alive for
the length of its request. Under CPython's default thresholds the collector ran about 180
times a job of 2,000 experiments at 256 requests in flight, 90–195 ms a job, 7–10 % of its
CPU (benchmarks/RESULTS.md, 2026-12-04); with the youngest generation collected every 10,000
allocations it runs a tenth as often. The older generations keep their own thresholds (so
they, and with them the full collections, run a tenth as often too) and cycles made meanwhile
are found by the next collection: nothing stays uncollected. Memory is not what the default
protects here: 10,000 young containers are a few MB at most. The process's objects are not
frozen out of the scans (:func:`gc.freeze`): cyclic garbage left between two jobs would be
frozen with them, and a process running a sweep's jobs one after another could keep it for good.

>>> import gc
>>> before = gc.get_threshold()
>>> with calling():
...     gc.get_threshold()[0] >= 10_000
True
>>> gc.get_threshold() == before
True
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: Container allocations between collections of the youngest generation while a job calls
#: (CPython's default is 700).
YOUNG_EVERY = 10_000

_lock = threading.Lock()
_inside = 0  # jobs calling in this process now (tests run some in threads)
_saved: tuple[int, ...] = ()  # the thresholds before the first of them


@contextlib.contextmanager
def calling() -> Iterator[None]:
    """The collector tuned for a job's calls (see the module's text), as it was afterwards,
    also when the job fails or a signal's exception stops it. Jobs in threads of one process
    share the setting: the first to start tunes it, the last to end puts it back. A process
    that set a larger threshold keeps it; one that turned the collector off keeps it off (a
    threshold is all this changes)."""
    global _inside, _saved
    with _lock:
        if _inside == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(YOUNG_EVERY, _saved[0]), *_saved[1:])
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                gc.set_threshold(*_saved)
