"""Notes that every job of a sweep would repeat (which pools it reads, why its prompt tokens
are estimated), said once per folder of jobs: a sweep's, an audit's, the demo's.

>>> first_time("results/sweep-a", "pool arith: 2,000 rows")
True
>>> first_time("results/sweep-a", "pool arith: 2,000 rows"), first_time("results/sweep-b", "pool arith: 2,000 rows")
(False, True)
"""

from __future__ import annotations

from pathlib import Path

#: The notes said in this process, by folder of jobs.
_SAID: set[tuple[str, str]] = set()


def first_time(folder: str | Path, note: str) -> bool:
    """Whether ``note`` is new in the folder of jobs ``folder``; from now on it counts as said."""
    said = (str(folder), note)
    if said in _SAID:
        return False
    _SAID.add(said)
    return True
