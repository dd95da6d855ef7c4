"""Typed records and the local store (DESIGN.md §5).

The store is the source of truth: one JSON file per experiment at
``<store>/<model>/<task>/<key>.json``, written to a temporary file and renamed into
place, so a reader never sees half a record, a job killed at any moment loses only
the experiments in flight, and any number of jobs may write to one store at once.
A rerun lists what is stored and calls nothing for it.

>>> store = Store("results/store")                    # doctest: +SKIP
>>> store.put(record); store.keys("smollm2_135m", "arith")

Exercised by ``pytest tests/test_records.py``.
"""

from __future__ import annotations

import hashlib
import json
import itertools
import os
import socket
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np
import orjson
from pydantic import BaseModel, Field

SCHEMA_VERSION = 1
_HOST = socket.gethostname().split(".")[0]


class Experiment(BaseModel):
    """One prompt sent to one model: the cell of the grid that a record answers."""

    model: str = Field(description="Model registry name.")
    task: str = Field(description="Task registry name.")
    n: int = Field(description="Instance count.")
    p: float = Field(description="Majority proportion.")
    majority_label: str = Field(description="y_maj.")
    seed: int = Field(description="Selection seed s.")
    pattern: str = Field(description="Order pattern registry name.")
    order_seed: Optional[int] = Field(default=None, description="s_order; random pattern only.")
    shuffle_seed: Optional[int] = Field(
        default=None, description="Expanded orderings (§5.2.1): X_maj and X_min shuffled independently before a structured pattern.")
    prompt_variant: str = Field(description="standard, hint, strategy or self_prompt.")
    budget: str = Field(description="Budget name (20k, 100k, smoke, …).")
    strategy: str = Field(default="single_call", description="Aggregation strategy: single_call (the paper), count_report, decomposed.")


class Stage(BaseModel):
    """One model call inside an attempt (self-prompting has two)."""

    name: str = Field(description="'answer', or 'instruction' for self-prompting's first stage.")
    prompt: Optional[str] = Field(default=None, description="The prompt, kept where it is not rebuildable (stage one).")
    prompt_hash: str = Field(description="sha256 of the prompt text.")
    output: Optional[str] = Field(default=None, description="Final content returned by the model.")
    reasoning: Optional[str] = Field(default=None, description="Reasoning trace, verbatim, where the backend returns one.")
    finish_reason: Optional[str] = Field(default=None, description="stop, length, …")
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    reasoning_tokens: Optional[int] = None
    max_tokens: Optional[int] = Field(default=None, description="Output-token limit the call ran under.")
    latency_s: Optional[float] = None
    usage: dict[str, Any] = Field(default_factory=dict, description="The backend's usage report, in full.")
    reasoning_raw: dict[str, Any] = Field(
        default_factory=dict, description="The server's other reasoning fields, verbatim (reasoning_details, or a field whose "
        "text differs from the trace). Before mip 0.2 this also repeated the trace's own field.")
    reasoning_from: list[str] = Field(
        default_factory=list, description="Response fields whose value was exactly `reasoning` (stored once, there).")
    provider: Optional[str] = Field(default=None, description="Who served the request, where the server says.")
    served_model: Optional[str] = Field(default=None, description="The model id the server reports.")


class Attempt(BaseModel):
    """One try at an experiment; up to ``max_attempts``, the first valid one counts."""

    index: int
    stages: list[Stage] = Field(default_factory=list)
    answer: Optional[str] = Field(default=None, description="Parsed label, '-1' for a tie, None if unparsed.")
    verdict: str = Field(description="correct, incorrect or invalid.")
    invalid_kind: Optional[str] = Field(default=None, description="input_overflow, parse or truncated.")
    counts: Optional[dict[str, int]] = Field(default=None, description="count_report: the per-label counts the model gave.")


class Record(BaseModel):
    """Everything one experiment produced, enough to rebuild and check its prompt."""

    schema_version: int = SCHEMA_VERSION
    key: str = Field(description="Stable hash of every field that changes the prompt or the generation.")
    experiment: Experiment
    pool_version: str = Field(description="Content hash of the pool the instances were drawn from.")
    pool_filtered: bool = Field(default=False, description="Whether the pool was filtered by model agreement (App. C.1).")
    instance_ids: list[str] = Field(description="Presented instance ids, in prompt order.")
    instance_labels: list[str] = Field(description="Gold labels of the presented instances, in prompt order.")
    prompt_hash: str = Field(description="sha256 of the final prompt (stage two for self-prompting).")
    prompt_tokens: Optional[int] = Field(default=None, description="Tokens of the final prompt, chat template included.")
    attempts: list[Attempt] = Field(default_factory=list)
    answer: Optional[str] = None
    verdict: str
    invalid_kind: Optional[str] = None
    predictions: Optional[list[Optional[str]]] = Field(
        default=None, description="decomposed: the label given to each presented instance, in prompt order (None: missing).")
    reported_counts: Optional[dict[str, int]] = Field(default=None, description="count_report: the counted attempt's counts.")
    config: dict[str, Any] = Field(default_factory=dict, description="Model, budget and generation config, secrets removed.")
    git_commit: Optional[str] = None
    mip_version: Optional[str] = None
    created_at: str = Field(description="UTC time the record was written (ISO 8601).")


def experiment_key(experiment: Experiment, pool_version: str, generation: dict[str, Any]) -> str:
    """Hash of every field that changes the prompt or the generation.

    ``generation`` holds what the backend is run with (model id, budget tokens,
    attempts, template version); the same key means the same call, so a stored record
    is never paid for twice.
    """
    fields = experiment.model_dump()
    # Fields added later are left out at their defaults, so earlier keys stay as they were.
    if fields.get("shuffle_seed") is None:
        fields.pop("shuffle_seed", None)
    if fields.get("strategy") == "single_call":
        fields.pop("strategy", None)
    payload = {"experiment": fields, "pool": pool_version, "generation": generation}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]


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
        rows = self._table[self._codes[positions]] if self._codes is not None else self._table[positions]
        body = rows.tobytes().replace(b"\x00", b"")  # the padding
        return JsonStrings(b"[" + body[:-1] + b"]")  # the last comma dropped


def _fields(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.__dict__
    if isinstance(value, JsonStrings):
        return orjson.Fragment(value.json)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def record_json(record: Record) -> bytes:
    """A record as UTF-8 JSON, the bytes pydantic would write, made by orjson from the
    models' fields: twice as fast on a record's 4,000 short id and label strings, and
    faster again where they come as :class:`JsonStrings`. Where orjson refuses a value (a
    lone surrogate, an integer past 64 bits) pydantic writes it."""
    try:
        return orjson.dumps(record, default=_fields)
    except orjson.JSONEncodeError:
        plain = record.model_copy(update={k: list(v) for k, v in record.__dict__.items() if isinstance(v, JsonStrings)})
        return plain.__pydantic_serializer__.to_json(plain)


class Store:
    """Records as one JSON file each under ``root/<model>/<task>/``."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser()
        self._folders: set[Path] = set()

    def path(self, model: str, task: str, key: str) -> Path:
        return self.root / model / task / f"{key}.json"

    def put(self, record: Record) -> Path:
        path = self.path(record.experiment.model, record.experiment.task, record.key)
        if path.parent not in self._folders:  # one mkdir per folder, not per record
            path.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(path.parent)
        atomic_write(path, record_json(record), make_folder=False)
        return path

    def keys(self, model: str, task: str) -> set[str]:
        return keys_in(self.root / model / task)

    def get(self, model: str, task: str, key: str) -> Record | None:
        path = self.path(model, task, key)
        return read_record(path) if path.is_file() else None

    def __iter__(self) -> Iterator[Record]:
        for path in sorted(self.root.rglob("*.json")):
            if path.name.startswith("."):
                continue
            record = read_record(path)
            if record is not None:
                yield record


def keys_in(folder: Path) -> set[str]:
    """The keys stored in ``folder`` (one ``<key>.json`` each), from its listing alone;
    temporary files, which start with a dot, are not keys."""
    if not folder.is_dir():
        return set()
    return {e.name[:-5] for e in os.scandir(folder) if e.name.endswith(".json") and not e.name.startswith(".")}


_TMP_COUNTER = itertools.count()


def atomic_write(path: Path, text: str | bytes, make_folder: bool = True) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place: readers
    see the old state or the whole file, never half of it. The temporary name is unique per
    host, process and write, so concurrent writers never share one."""
    if make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{_HOST}-{os.getpid()}-{next(_TMP_COUNTER)}{path.suffix}")
    try:
        with open(tmp, "xb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.replace(tmp, path)  # atomic on POSIX
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_record(path: Path) -> Record | None:
    """A stored record, or None with a warning naming the file when it is unreadable."""
    try:
        return Record.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as e:
        warnings.warn(f"Skipping unreadable record {path}: {type(e).__name__}: {str(e)[:200]}", stacklevel=2)
        return None


def iter_records(paths: Iterable[str | Path]) -> Iterator[Record]:
    """Every readable record under the given folders (a store, job or sweep folders), skipping
    job manifests, cached pools, W&B files and temporary files."""
    for root in map(Path, paths):
        files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
        for path in files:
            if path.name.startswith(".") or path.name == "job.json" or {"pools", "wandb"} & set(path.parts):
                continue
            record = read_record(path)
            if record is not None:
                yield record
