"""Files written so that neither a kill nor a crash of the machine leaves half of one, and
the listing of a folder of such files. The store (:mod:`mip.store`) is built on these.

>>> atomic_write(Path("results/x.json"), b"{}")            # doctest: +SKIP

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> atomic_write(folder / "k1.json", "{}", durable=False)
>>> _ = (folder / ".k2.json.tmp").write_text("")   # a writer's temporary file: not a key
>>> keys_in(folder)
{'k1'}
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import queue
import socket
import threading
from collections.abc import Callable
from pathlib import Path

_HOST = socket.gethostname().split(".")[0]
#: A temporary file of another host (whose process we cannot see) is stale after this long.
STALE_TMP_S = 24 * 3600.0


_TMP_COUNTER = itertools.count()


MIN_FREE_BYTES = 1 << 20  # a job's folder and first records need well under this


def unwritable(folder: Path, min_free: int = MIN_FREE_BYTES) -> str | None:
    """Why nothing can be written under ``folder`` (created if missing), in a few words, or None:
    a read-only or missing file system, or less than ``min_free`` bytes free. A small file is
    written and removed to find out (``access`` says yes to root on a read-only mount)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".tmp-{_HOST}-{os.getpid()}-{next(_TMP_COUNTER)}.probe"
        try:
            probe.write_bytes(b"\0" * 4096)
        finally:
            probe.unlink(missing_ok=True)
        space = os.statvfs(folder)
    except OSError as e:
        return f"{e.strerror or e}" + (f": {e.filename}" if e.filename and Path(e.filename) != folder else "")
    free = space.f_bavail * space.f_frsize
    return None if free >= min_free else f"the disk is full ({free // 1024} KiB free)"


def atomic_write(path: Path, data: str | bytes, make_folder: bool = True, durable: bool = True,
                 syncer: Syncer | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place: readers
    see the old state or the whole file, never half of it, and a killed process loses
    nothing once this returns. ``durable`` also flushes the file and its folder to disk
    (``fsync``) so the file survives a crash of the machine: here, or in ``syncer``'s
    thread (see :class:`Syncer`). The temporary name is unique per host, process and write,
    so writers never share one."""
    if make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{_HOST}-{os.getpid()}-{next(_TMP_COUNTER)}{path.suffix}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with memoryview(data.encode("utf-8") if isinstance(data, str) else data) as view:
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view):]
        os.replace(tmp, path)  # atomic on POSIX
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    if not durable:
        os.close(fd)
    elif syncer is not None:
        syncer.submit(fd, path.parent)
    else:
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_folder(path.parent)


class Syncer:
    """Flushes written files and their folders to disk in a thread of its own.

    ``fsync`` waits for the disk (1–2 ms a file here), not the CPU, and releases the GIL; in
    the job's thread it would hold up every request behind it (64 in flight: a fifth of the
    rate). Files are renamed into place before they are handed over, so a killed process
    loses nothing; :meth:`flush` waits until everything handed over is on disk and raises the
    first error the disk gave. Folders are flushed once per batch.

    A pack (a file still appended to, :mod:`mip.store.packs`) is handed over once for all the
    lines appended until its flush starts, and the thread lets lines gather for up to
    :attr:`linger_s` first: waking the thread for every line cost the job's core a context
    switch per record (in a profile at c = 64, 1.0 s of the job's 9.6 s; RESULTS.md 2026-12-03).
    :meth:`flush` cuts the wait short. A syncer serves the thread that writes (a job's store,
    its job's thread): :meth:`submit` and :meth:`close` do not run at the same time.
    """

    linger_s = 0.05

    def __init__(self, limit: int = 256):
        self._queue: queue.Queue[tuple[int, Path | None, bool, Callable[[], None] | None] | None] = \
            queue.Queue(maxsize=limit)  # bounds the open files
        self._idle = threading.Condition()
        self._hurry = threading.Event()
        self._pending = 0
        self._error: OSError | None = None
        self._thread: threading.Thread | None = None

    def submit(self, fd: int, folder: Path | None, close: bool = True,
               starting: Callable[[], None] | None = None) -> None:
        """Put ``fd`` (and ``folder``, where given) on disk in the thread; ``close``: close
        ``fd`` then (a file written whole), else leave it open and let writes gather first (a
        pack still appended to); ``starting`` is called in the thread just before the flush:
        what is written after it needs another."""
        self.raise_error()
        with self._idle:
            self._pending += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mip-fsync", daemon=True)
            self._thread.start()
        self._queue.put((fd, folder, close, starting))

    def _run(self) -> None:
        ending = False
        while not ending:
            first = self._queue.get()
            if first is None:  # close()
                return
            batch = [first]
            if not first[2]:  # a pack: let its lines gather
                self._hurry.wait(self.linger_s)
            while not self._queue.empty() and len(batch) < 512:
                item = self._queue.get_nowait()
                if item is None:
                    ending = True
                    break
                batch.append(item)
            try:
                self._flush(batch)
            except OSError as e:
                self._error = self._error or e
            with self._idle:
                self._pending -= len(batch)
                self._idle.notify_all()

    def _flush(self, batch: list[tuple[int, Path | None, bool, Callable[[], None] | None]]) -> None:
        """Put a batch of written files and their folders on disk; every file handed over to
        be closed is closed, also when the disk fails. A pack handed over several times in
        the batch is flushed once."""
        try:
            for *_, starting in batch:
                if starting is not None:
                    starting()
            for fd in dict.fromkeys(fd for fd, *_ in batch):
                os.fdatasync(fd)
            for folder in {folder for _, folder, *_ in batch if folder is not None}:
                fsync_folder(folder)
        finally:
            for fd, _, close, _ in batch:
                if close:
                    os.close(fd)

    def flush(self) -> None:
        """Wait until everything handed over is on disk; raise the disk's first error."""
        self._hurry.set()
        try:
            with self._idle:
                self._idle.wait_for(lambda: self._pending == 0)
        finally:
            self._hurry.clear()
        self.raise_error()

    def close(self) -> None:
        """Flush everything handed over (raising the disk's first error), then end the thread;
        a later :meth:`submit` starts another. Each job makes a store, and a sweep runs its
        jobs one after another in one process: without this every job left a thread behind
        (and glibc a memory arena with it)."""
        thread = self._thread
        if thread is None:
            return
        try:
            self.flush()
        finally:
            self._thread = None  # first: a signal's exception during the join leaves no dead thread in charge
            self._queue.put(None)
            thread.join()

    def raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


#: File systems on a machine's own disks or memory: their ``stat`` is never a cached copy.
LOCAL_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "tmpfs", "bcachefs", "jfs",
                                "overlay"})


def local_disk(path: Path, mountinfo: str | None = None) -> bool:
    """Whether ``path`` lies on a local file system, by the mount table (Linux's
    ``/proc/self/mountinfo``, or ``mountinfo``); where there is none to read, no.

    >>> local_disk(Path("/proc"))
    False
    """
    try:
        table = (Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace") if mountinfo is None
                 else mountinfo)
        real = os.path.realpath(path)
    except OSError:
        return False
    best, kind = "", ""
    for line in table.splitlines():  # <id> <parent> <dev> <root> <mount point> <options> ... - <type> <source> ...
        fields, _, tail = line.partition(" - ")
        parts = fields.split(" ")
        if len(parts) < 5 or not tail:
            continue
        point = parts[4].replace("\\040", " ")
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, tail.split(" ")[0]
    return kind in LOCAL_FILE_SYSTEMS


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename into it) to disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_tmp(entry: os.DirEntry) -> bool:
    """A temporary file whose writer is gone: its process on this host has ended, or it is
    older than :data:`STALE_TMP_S` (another host's)."""
    parts = entry.name.split("-")  # .tmp-<host>-<pid>-<n>.json; a host name may hold dashes
    try:
        host, pid = "-".join(parts[1:-2]), int(parts[-2])
    except (ValueError, IndexError):
        return False
    if host == _HOST:
        return not _pid_alive(pid)
    try:
        return dt.datetime.now().timestamp() - entry.stat().st_mtime > STALE_TMP_S
    except OSError:
        return False


def keys_in(folder: Path, clear_stale: bool = False) -> set[str]:
    """The keys stored in ``folder`` (one ``<key>.json`` each), from its listing alone;
    temporary files, which start with a dot, are not keys. ``clear_stale`` removes the
    temporary files of writers that are gone."""
    if not folder.is_dir():
        return set()
    keys = set()
    for entry in os.scandir(folder):
        name = entry.name
        if name.startswith(".tmp-"):
            if clear_stale and _stale_tmp(entry):
                Path(entry.path).unlink(missing_ok=True)
        elif name.endswith(".json") and not name.startswith("."):
            keys.add(name[:-5])
    return keys
