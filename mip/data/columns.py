"""Pool columns of strings kept JSON-encoded, so a record takes its experiment's 2,000
instance ids and labels with one gather instead of 4,000 Python strings (the largest single
cost left per experiment at 64 requests in flight; benchmarks/RESULTS.md). Pools keep the
columns (:mod:`mip.data.pools`), plans take from them (:mod:`mip.experiment.planning`), and the
store writes what they give as it is (:func:`mip.store.record_json`); a record read back
holds plain lists.

>>> JsonColumn(["a", "b", "c"]).take(np.array([2, 0]))
JsonStrings(['c', 'a'])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import orjson


class JsonStrings(Sequence[str]):
    """A list of strings held as its JSON array (UTF-8 bytes), as :class:`JsonColumn` takes it.

    It reads as the list it encodes (decoded once, on first use) and :func:`record_json`
    writes its bytes as they are, so a record's 2,000 ids and labels reach the file without
    a Python object each.
    """

    __slots__ = ("json", "_decoded")

    def __init__(self, json: bytes) -> None:
        self.json = json
        self._decoded: list[str] | None = None

    def _list(self) -> list[str]:
        if self._decoded is None:
            self._decoded = orjson.loads(self.json)
        return self._decoded

    def __getitem__(self, index):  # type: ignore[override]
        return self._list()[index]

    def __len__(self) -> int:
        return len(self._list())

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonStrings):
            return self.json == other.json or self._list() == other._list()
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, and as unhashable

    def __repr__(self) -> str:
        return f"JsonStrings({self._list()!r})"


class JsonColumn:
    """A column of strings kept JSON-encoded in one fixed-width byte table, indexed by position.

    :meth:`take` makes the JSON array of any selection with one gather over that table. Every
    record holds its experiment's 2,000 instance ids and labels in prompt order; taking them as
    Python strings (indexing, listing, encoding and freeing 4,000 objects spread over the heap)
    was the largest single cost left per experiment at 64 requests in flight (see
    benchmarks/RESULTS.md). Each entry is the string's JSON and a comma, padded with NUL bytes,
    which JSON text never holds raw (a NUL inside a string is escaped), so the padding is
    dropped by value. A column of few distinct values (labels) keeps a byte per position into a
    table of them, small enough to stay in cache.

    >>> JsonColumn(["a", "b", "c"]).take(np.array([2, 0])).json
    b'["c","a"]'
    """

    def __init__(self, values: Sequence[str]):
        encoded = [orjson.dumps(v) + b"," for v in values]  # raises orjson.JSONEncodeError on a lone surrogate
        table = np.array(encoded, dtype=f"S{max(map(len, encoded), default=1)}")
        distinct, codes = np.unique(table, return_inverse=True)
        few = len(distinct) <= 256 and len(distinct) < len(table)
        self._codes = codes.reshape(-1).astype(np.uint8) if few else None
        self._table = distinct if self._codes is not None else table

    @classmethod
    def of(cls, values: Sequence[str]) -> JsonColumn | None:
        """The column, or None where a value has no UTF-8 form (a lone surrogate from an
        undecodable file): its records then take plain lists."""
        try:
            return cls(values)
        except orjson.JSONEncodeError:
            return None

    def take(self, positions: np.ndarray) -> JsonStrings:
        """The values at ``positions``, in that order, as their JSON array."""
        if not len(positions):
            return JsonStrings(b"[]")
        rows = np.take(self._table, np.take(self._codes, positions) if self._codes is not None else positions)
        body = rows.tobytes().replace(b"\x00", b"")  # the padding
        return JsonStrings(b"".join((b"[", memoryview(body)[:-1], b"]")))  # the last comma dropped
