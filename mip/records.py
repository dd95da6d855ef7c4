"""Typed records (DESIGN.md §5): what one experiment produced, enough to rebuild and check
its prompt. The store that keeps them is :mod:`mip.store`.

>>> counted_attempt(record.attempts).verdict          # doctest: +SKIP
'correct'

Exercised by ``pytest tests/test_records.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Optional

import numpy as np
import orjson
from pydantic import BaseModel, Field

SCHEMA_VERSION = 1


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
    key_scheme: int = Field(default=1, description="How `key` was made (mip.keys): 1 before mip 0.3 (a subset of the "
                            "settings), 2 every answer-shaping setting. Records written before 0.3 read as 1.")
    key: str = Field(description="Stable hash of the experiment, its pool and every setting that shapes its answer.")
    experiment: Experiment
    pool_version: str = Field(description="Content hash of the pool the instances were drawn from.")
    pool_filtered: bool = Field(default=False, description="Whether the pool was filtered by model agreement (App. C.1).")
    instance_ids: list[str] = Field(description="Presented instance ids, in prompt order.")
    instance_labels: list[str] = Field(description="Gold labels of the presented instances, in prompt order.")
    prompt_hash: str = Field(description="sha256 of the final prompt (stage two for self-prompting).")
    prompt_tokens: Optional[int] = Field(default=None, description="Tokens of the final prompt, chat template included.")
    attempts: list[Attempt] = Field(default_factory=list, description="Every attempt paid, in order, also those a "
                                    "killed job made (kept under the store's .attempts/ until the record was written).")
    attempts_allowed: Optional[int] = Field(default=None, description="Attempts this experiment could have (§3.2: up "
                                            "to max_attempts; 1 for a model whose config says it decodes "
                                            "deterministically). None before mip 0.3 (see config).")
    answer: Optional[str] = None
    verdict: str
    invalid_kind: Optional[str] = None
    scoring_rule: Optional[int] = Field(default=None, description="The answer rule that gave the verdict "
                                        "(mip.scoring.RULE_VERSION); None before mip 0.3 (rule 1).")
    predictions: Optional[list[Optional[str]]] = Field(
        default=None, description="decomposed: the label given to each presented instance, in prompt order (None: missing).")
    reported_counts: Optional[dict[str, int]] = Field(default=None, description="count_report: the counted attempt's counts.")
    config: dict[str, Any] = Field(default_factory=dict, description="Model, budget and generation config, secrets removed.")
    git_commit: Optional[str] = None
    mip_version: Optional[str] = None
    created_at: str = Field(description="UTC time the record was written (ISO 8601).")


def counted_attempt(attempts: Sequence[Attempt]) -> Attempt | None:
    """The attempt whose verdict is the experiment's (§3.2): the first valid one, else the
    last one, else None (an experiment stored before any call, e.g. an input overflow)."""
    return next((a for a in attempts if a.verdict != "invalid"), attempts[-1] if attempts else None)


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


_MOVED_TO_STORE = {"Store", "atomic_write", "keys_in", "read_record", "iter_records", "record_json"}


def __getattr__(name: str) -> Any:
    """The store's names, importable from here as in mip 0.2 (they moved to :mod:`mip.store`)."""
    if name in _MOVED_TO_STORE:
        import mip.store

        return getattr(mip.store, name)
    raise AttributeError(f"module 'mip.records' has no attribute {name!r}")
