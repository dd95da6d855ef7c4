"""Python's cycle collector while a job calls: it scans only what the calls make, and
less often.

Each experiment makes a few hundred short-lived containers (request, reply, attempt and
record objects, asyncio's tasks and futures) and keeps lists of its 2,000 texts alive for
the length of its request. Under CPython's default thresholds the collector ran about 180
times a job of 2,000 experiments at 256 requests in flight, and its full collections walked
every object the process held (imports, pools, plans): 90–190 ms a job, 5–8 % of its CPU
(benchmarks/RESULTS.md, 2026-12-04). While a job calls, :func:`calling` moves what the
process held before into the collector's permanent generation (:func:`gc.freeze`), which it
never scans, and collects the youngest generation every 10,000 container allocations
instead of 700. Nothing is left uncollected: the settings come back when the job ends, the
frozen objects rejoin the oldest generation, and cycles made meanwhile are found by the
next collection. Memory is not what the default thresholds protect here: 10,000 young
containers are a few MB at most.

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
_saved: tuple[tuple[int, ...], bool] | None = None  # the settings before the first of them: thresholds, whether we froze


@contextlib.contextmanager
def calling() -> Iterator[None]:
    """The collector tuned for a job's calls (see the module's text), as it was afterwards.
    Jobs in threads of one process share the setting: the first to start tunes it, the last
    to end puts it back. A process that turned the collector off, or froze objects itself,
    keeps what it chose."""
    global _inside, _saved
    with _lock:
        if _inside == 0:
            threshold = gc.get_threshold()
            freeze = gc.isenabled() and gc.get_freeze_count() == 0
            _saved = (threshold, freeze)
            if gc.isenabled():
                if freeze:
                    gc.freeze()
                gc.set_threshold(max(YOUNG_EVERY, threshold[0]), *threshold[1:])
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0 and _saved is not None:
                threshold, froze = _saved
                _saved = None
                gc.set_threshold(*threshold)
                if froze:
                    gc.unfreeze()
