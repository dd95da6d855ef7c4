"""A claim file on disk: writing one, telling whether a path is still the file a job holds,
and what changes when one comes or goes (:mod:`mip.store.claims` decides with them;
:mod:`mip.store.claim_quiet` reads the time stamps).

>>> listing(Path("/no/such/claims/folder"))
()
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import uuid
from pathlib import Path
from typing import IO


def listing(folder: Path) -> tuple:
    """What changes when a claim file appears or goes (one ``stat``, not a listing)."""
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return ()
    return st.st_ino, st.st_mtime_ns


def same_file(path: Path, handle: IO[str]) -> bool:
    """Whether ``path`` is still the file ``handle`` holds open (not removed nor replaced)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def claim_path(folder: Path) -> Path:
    """A new claim file's name in ``folder``: its host, process and a nonce."""
    return folder / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.claim"


def write_claim(path: Path, keys: frozenset[str], output_dir: str | Path, since: tuple[float, str]) -> IO[str]:
    """The new claim file ``path`` of this job, locked and written: its open handle (the lock lives with it)."""
    host = socket.gethostname()
    handle = open(path, "x", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        json.dump({"host": host, "pid": os.getpid(), "started": started,
                   "output_dir": str(output_dir), "since": list(since), "keys": sorted(keys)}, handle)
        handle.flush()
    except BaseException:
        handle.close()
        path.unlink(missing_ok=True)
        raise
    return handle
