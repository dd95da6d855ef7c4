"""Record packs: the records one job writes into one task folder, one JSON line each,
appended to a file only that job writes (``<store>/<model>/<task>/pack-<time>-<host>-<pid>-<n>.jsonl``).

Why packs and not one file per record: creating a file is the dearest thing a job does per
experiment. On ext4 a new inode cost 0.04–0.90 ms of kernel time, and 18 % of all CPU
samples of a c = 256 run, where appending a line costs a write (``benchmarks/RESULTS.md``,
2026-12-03). On a cluster's shared file system each file created is also a round trip to
its metadata server.

What makes a line safe to count:

- A line is appended whole (one ``writev``) to a file no other process writes, so jobs never
  interleave, on a local disk or a shared one. It counts as stored once it ends with its
  newline and is on disk (``fdatasync`` in the store's :class:`mip.data.files.Syncer`).
- A kill or a crash can leave a torn last line (no newline yet): that experiment was in
  flight, the line is never read, and the rerun asks it again. A failed write is cut back
  (``ftruncate``), so a later line never joins a torn one.
- A complete line that does not read back valid is damaged. A job copies it under
  ``.quarantine/`` with a line in the quarantine log naming the pack and the byte it starts
  at (:func:`mip.store.quarantine.quarantine_line`); from then on every reader skips it. A pack is never rewritten,
  since its job may still be appending.

Beside each pack, its index (``pack-….keys``: ``<key> <offset> <length>`` a line, appended
after each record's line) lets a job find which keys a folder holds without reading every
record of it; it is a hint, checked against the pack (its entries must tile the pack from
byte 0; in a pack edited in place after its index, each must end on its line's newline), and
where a crash left it short or an edit moved its lines, the pack itself is read from there.

>>> import tempfile; from mip.data.files import Syncer
>>> folder = Path(tempfile.mkdtemp())
>>> pack = PackWriter(folder, Syncer())
>>> [pack.append(b'{"key":"k%d"}' % i, f"k{i}").offset for i in (1, 2)]
[0, 13]
>>> pack.close()
>>> _ = open(pack.path, "ab").write(b'{"key":"k3"')   # a torn last line: not read
>>> [(key, line.offset) for key, line in scan(pack.path)[0]]
[('k1', 0), ('k2', 13)]
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import re
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from mip.data.files import _HOST, Syncer

#: A record's key, near the start of its line (``{"schema_version":…,"key_scheme":…,"key":"…"``).
_KEY = re.compile(rb'"key":"([^"\\]{1,200})"')
_HEAD = 512
_CHUNK = 1 << 23
_COUNTER = itertools.count()


def is_pack(name: str) -> bool:
    """Whether a file name is a record pack's (``pack-….jsonl``)."""
    return name.startswith("pack-") and name.endswith(".jsonl")


@dataclass(frozen=True)
class Line:
    """Where one record lies: a pack, the byte its line starts at and its length (no newline)."""

    pack: Path
    offset: int
    length: int

    def read(self) -> bytes:
        with open(self.pack, "rb") as f:
            f.seek(self.offset)
            data = f.read(self.length)
        if len(data) != self.length:
            raise ValueError(f"the pack ends at byte {self.offset + len(data)}, inside this line")
        return data


def line_key(head: bytes) -> str | None:
    """The key a line's first bytes name, or None (a damaged line)."""
    found = _KEY.search(head[:_HEAD])
    return found.group(1).decode("utf-8", "replace") if found else None


def _complete(pack: Path, start: int) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of each complete line of ``pack`` from byte ``start``. Read, not mapped:
    a pack cut back under a map would kill the reader (SIGBUS)."""
    with open(pack, "rb") as f:
        f.seek(start)
        pos, rest = start, b""
        while chunk := f.read(_CHUNK):
            data = rest + chunk if rest else chunk
            begin = 0
            while (end := data.find(b"\n", begin)) != -1:
                if end > begin:
                    yield pos + begin, data[begin:end]
                begin = end + 1
            pos, rest = pos + begin, data[begin:]


def keys_file(pack: Path) -> Path:
    """A pack's index: ``<key> <offset> <length>`` a line, appended after each record's line."""
    return pack.with_suffix(".keys")


def _indexed(pack: Path, size: int, changed_ns: int) -> tuple[list[tuple[str, int, int]], int]:
    """The index's entries that match the pack (contiguous from byte 0, each line within its
    ``size``), and the byte after the last. An index a crash left behind the pack (or none,
    or one that stops making sense) ends early: the pack itself is scanned from there.

    A pack changed after its index was last written (``changed_ns``, its modification time, is
    later: a person edited it in place) has each entry checked against its bytes: an entry
    counts only where its line ends with a newline, so the first line an edit moved ends the
    index, and the pack is read from there (never a slice of the wrong bytes)."""
    index = keys_file(pack)
    try:
        text = index.read_bytes()
        edited = changed_ns > os.stat(index).st_mtime_ns
    except FileNotFoundError:
        return [], 0
    entries, expected = [], 0
    with open(pack, "rb") if edited else nullcontext() as f:
        for entry in text.split(b"\n")[:-1]:  # the last is empty, or an entry being written
            try:
                key, offset, length = entry.decode("ascii").split(" ")
                offset, length = int(offset), int(length)
            except ValueError:
                break
            if offset != expected or offset + length + 1 > size:
                break
            if f is not None and os.pread(f.fileno(), 1, offset + length) != b"\n":
                break  # the line no longer ends there: edited in place
            entries.append((key, offset, length))
            expected = offset + length + 1
    return entries, expected


#: Seconds a pack must have been left alone before :func:`scan` keeps what it found there.
_SETTLED = 2.0
#: What :func:`scan` found in each settled pack, with the pack's (inode, size, mtime) when read:
#: this process's memo.
_SCANS: dict[Path, tuple[tuple[int, int, int], list[tuple[str | None, Line]], int]] = {}


def scan(pack: Path, start: int = 0) -> tuple[list[tuple[str | None, Line]], int]:
    """The complete lines of ``pack`` from byte ``start``, each with its key (None for a
    line that names none: a damaged one), and the byte after the last complete line: where the
    next scan of a growing pack starts. The pack's index gives the keys without reading the
    records; lines beyond it are read.

    A pack is only ever appended to, so this process keeps what it found in a pack left alone
    for :data:`_SETTLED` seconds and reads it again only once the pack's inode, size or
    modification time changed: a sweep's jobs, run one after another in one process, each list
    the same task folders. (A file's time stamp is as coarse as the kernel's clock tick: a pack
    written within a tick of its scan could change again under the same stamp.)"""
    stat = os.stat(pack)
    stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    known = _SCANS.get(pack)
    if known is None or known[0] != stamp:
        known = (stamp, *_scan(pack, stat.st_size, stat.st_mtime_ns))
        if time.time() - stat.st_mtime > _SETTLED:
            _SCANS[pack] = known
    _, found, after = known
    return [(k, line) for k, line in found if line.offset >= start], max(start, after)


def _scan(pack: Path, size: int, changed_ns: int) -> tuple[list[tuple[str | None, Line]], int]:
    entries, after = _indexed(pack, size, changed_ns)
    found: list[tuple[str | None, Line]] = [(k, Line(pack, o, n)) for k, o, n in entries]
    for offset, data in _complete(pack, after) if after < size else ():
        found.append((line_key(data[:_HEAD]), Line(pack, offset, len(data))))
        after = offset + len(data) + 1
    return found, after


def lines(pack: Path) -> Iterator[tuple[Line, bytes]]:
    """Every complete line of ``pack`` with its bytes, in order."""
    for offset, data in _complete(pack, 0):
        yield Line(pack, offset, len(data)), data


class PackWriter:
    """Appends lines to a new pack of this process's own and hands each to ``syncer``."""

    def __init__(self, folder: Path, syncer: Syncer):
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        self.path = folder / f"pack-{stamp}-{_HOST}-{os.getpid()}-{next(_COUNTER)}.jsonl"
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        self.index = os.open(keys_file(self.path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        self.size = 0
        self.syncer = syncer
        self._queued = False

    def append(self, data: bytes, key: str) -> Line:
        """Append ``data`` (one line's JSON, no newline, holding ``key``) and its newline; on
        disk once the syncer's :meth:`~mip.data.files.Syncer.flush` returns. A write that fails
        is cut back, so what the pack holds stays whole lines. Then the line's index entry:
        a hint for readers, never flushed on its own (a reader checks it against the pack)."""
        start = self.size
        try:
            done = os.writev(self.fd, [data, b"\n"])
            if done < len(data) + 1:  # a short write (a full disk, a signal): finish it
                with memoryview(data + b"\n") as rest:
                    rest = rest[done:]
                    while rest:
                        rest = rest[os.write(self.fd, rest):]
        except BaseException:
            try:
                os.ftruncate(self.fd, start)
            except OSError:
                pass
            raise
        self.size = start + len(data) + 1
        if self.index >= 0:
            try:
                os.write(self.index, f"{key} {start} {len(data)}\n".encode())
            except OSError:  # readers read the pack from where the index stops
                os.close(self.index)
                self.index = -1
        if not self._queued:  # one flush covers every line appended before it starts
            self._queued = True
            self.syncer.submit(self.fd, self.path.parent if start == 0 else None, close=False, starting=self._flushing)
        return Line(self.path, start, len(data))

    def _flushing(self) -> None:
        self._queued = False

    def close(self) -> None:
        """Close the pack once all its lines are on disk."""
        if self.fd >= 0:
            try:
                self.syncer.flush()
            except OSError:
                pass  # the job that wrote the lines was told when it flushed before counting them
            finally:
                os.close(self.fd)
                self.fd = -1
                if self.index >= 0:
                    os.close(self.index)
                    self.index = -1

