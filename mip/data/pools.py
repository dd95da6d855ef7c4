"""Pools: the labelled instances of one task, sampled, content-hashed and cached (App. C.1).

A pool takes every row a loader returns, keeps each exact text once, drops texts that
carry two labels, and samples ``pool_size / 2`` instances of each label with
``pool_seed``. Its version is a hash of its content, so a record that names a pool
version names exactly the instances it could have drawn from.

>>> from collections import Counter
>>> dropped, rows = Counter(), [Row("1", "a", "x"), Row("2", "a", "x"), Row("3", "b", "x"), Row("4", "b", "y")]
>>> [r.id for r in deduplicate(rows, dropped)], dict(dropped)
(['1'], {'duplicate text': 1, 'text with two labels': 2})
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from filelock import FileLock

from mip.data.columns import JsonColumn
from mip.data.sources import LOADERS, DataError, LoadResult, Row, table_path
from mip.data.files import atomic_write

if TYPE_CHECKING:
    from mip.config import TaskConfig

#: Bump when a loader or the pooling rule changes what a pool holds.
POOL_FORMAT = 3


@dataclass(frozen=True, slots=True)
class Instance:
    id: str
    text: str
    label: str
    target: str | None = None
    """Instance-level ground truth (App. A) where it is more than the label; None: the label."""

    @property
    def truth(self) -> str:
        return self.target if self.target is not None else self.label


@dataclass
class PoolMeta:
    task: str
    labels: list[str]
    source: str
    files: list[str]
    rows_read: int
    dropped: dict[str, int]
    rows_labelled: dict[str, int]
    sampled: dict[str, int]
    pool_seed: int
    filtered: bool = False
    notes: list[str] = field(default_factory=list)
    filter_models: list[str] = field(default_factory=list)
    """Models every kept instance was answered correctly by (App. C.1); empty when unfiltered."""
    source_pool: str | None = None
    """The unfiltered pool a filtered pool came from."""


class Columns(NamedTuple):
    """A pool's ids, texts and labels as parallel object arrays, indexed by pool position;
    ids and labels also JSON-encoded for records (None where a value cannot be)."""

    ids: np.ndarray
    texts: np.ndarray
    labels: np.ndarray
    ids_json: JsonColumn | None
    labels_json: JsonColumn | None


@dataclass
class Pool:
    task: str
    labels: tuple[str, str]
    instances: list[Instance]
    version: str
    meta: PoolMeta

    @cached_property
    def _position_of_id(self) -> dict[str, int]:
        return {x.id: i for i, x in enumerate(self.instances)}

    @cached_property
    def _positions_of_label(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {label: [] for label in self.labels}
        for i, x in enumerate(self.instances):
            out[x.label].append(i)
        return out

    @cached_property
    def columns(self) -> Columns:
        """Ids, texts and labels as parallel arrays: an experiment takes its 2,000 texts by
        position from these in one step, several times faster than reading them off objects."""
        one = {label: label for label in self.labels}  # one string object per label, not one per instance

        def column(values: list[str]) -> np.ndarray:
            out = np.empty(len(values), dtype=object)  # never a 2-D array, whatever the strings
            out[:] = values
            return out

        ids, labels = [x.id for x in self.instances], [one[x.label] for x in self.instances]
        return Columns(column(ids), column([x.text for x in self.instances]), column(labels),
                       JsonColumn.of(ids), JsonColumn.of(labels))

    def positions(self, label: str) -> list[int]:
        """Positions of this label's instances, in the pool's stored (canonical) order."""
        if label not in self._positions_of_label:
            raise ValueError(f"Task {self.task!r} has labels {list(self.labels)}, not {label!r}.")
        return self._positions_of_label[label]

    def position(self, instance_id: str) -> int:
        """Where an instance lies in the pool (KeyError when the pool does not hold it)."""
        return self._position_of_id[instance_id]

    def get(self, instance_id: str) -> Instance:
        return self.instances[self.position(instance_id)]

    def summary(self) -> str:
        kept = ", ".join(f"{k}: {v}" for k, v in self.meta.sampled.items())
        dropped = ", ".join(f"{k}: {v}" for k, v in self.meta.dropped.items()) or "none"
        return (
            f"pool {self.task}@{self.version}: read {self.meta.rows_read} rows from {self.meta.source}, "
            f"dropped {sum(self.meta.dropped.values())} ({dropped}); sampled {kept}"
            + ("; unfiltered" if not self.meta.filtered else f"; filtered by {', '.join(self.meta.filter_models)}")
            + "".join(f"\n  note: {n}" for n in self.meta.notes)
        )


def pool_version(task: str, labels: tuple[str, str], instances: list[Instance]) -> str:
    """Content hash of a pool: its task, labels and every instance (one JSON encoding, one hash)."""
    payload = [task, list(labels), POOL_FORMAT, [[x.id, x.text, x.label, x.target] for x in instances]]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()[:16]


def deduplicate(rows: list[Row], dropped: Counter) -> list[Row]:
    """Keep each exact text once; drop every copy of a text that carries two labels."""
    labels_of: dict[str, set[str]] = {}
    for r in rows:
        labels_of.setdefault(r.text, set()).add(r.label)
    seen: set[str] = set()
    out: list[Row] = []
    for r in rows:
        if len(labels_of[r.text]) > 1:
            dropped["text with two labels"] += 1
        elif r.text in seen:
            dropped["duplicate text"] += 1
        else:
            seen.add(r.text)
            out.append(r)
    return out


def sample_pool(cfg: TaskConfig, loaded: LoadResult) -> Pool:
    """Pure: the pool of ``cfg`` from the rows a loader returned."""
    labels = (cfg.labels[0], cfg.labels[1])
    dropped = Counter(loaded.dropped)
    rows = deduplicate(loaded.rows, dropped)
    notes = list(loaded.notes)
    per_label = cfg.pool_size // 2
    instances: list[Instance] = []
    labelled: dict[str, int] = {}
    sampled: dict[str, int] = {}
    for k, label in enumerate(labels):
        of_label = [r for r in rows if r.label == label]
        labelled[label] = len(of_label)
        if len(of_label) <= per_label:
            chosen = range(len(of_label))
            if len(of_label) < per_label:
                notes.append(f"label {label} has only {len(of_label)} of the {per_label} instances asked for; all kept")
        else:
            # One generator per label, so one label's count never shifts the other's sample.
            rng = np.random.default_rng([cfg.pool_seed, k])
            chosen = sorted(rng.choice(len(of_label), size=per_label, replace=False).tolist())
        picked = [Instance(of_label[i].id, of_label[i].text, label, of_label[i].target) for i in chosen]
        sampled[label] = len(picked)
        instances += picked
    if not all(sampled.values()):
        raise DataError(
            f"Task {cfg.name!r}: no instance of label(s) {[k for k, v in sampled.items() if not v]} "
            f"after the label rule ({loaded.read} rows read). Check the task's labels and data source."
        )
    meta = PoolMeta(
        task=cfg.name,
        labels=list(labels),
        source=loaded.source,
        files=loaded.files,
        rows_read=loaded.read,
        dropped=dict(sorted(dropped.items())),
        rows_labelled=labelled,
        sampled=sampled,
        pool_seed=cfg.pool_seed,
        notes=notes,
    )
    return Pool(cfg.name, labels, instances, pool_version(cfg.name, labels, instances), meta)


def _fingerprint(cfg: TaskConfig, data_dir: Path | None) -> str:
    """What the cached pool depends on: the task's data config and the source files' stats."""
    spec = {
        "format": POOL_FORMAT,
        "name": cfg.name,
        "labels": list(cfg.labels),
        "source": asdict(cfg.source),
        "pool_size": cfg.pool_size,
        "pool_seed": cfg.pool_seed,
        "data_dir": str(data_dir) if data_dir else None,
    }
    if data_dir is not None:
        root = data_dir / (cfg.source.local_dir or "")
        if root.is_dir():
            spec["files"] = sorted(
                (str(p.relative_to(data_dir)), p.stat().st_size, p.stat().st_mtime_ns)
                for p in root.rglob("*")
                if p.is_file()
            )
    if cfg.source.path:
        p = table_path(cfg.source.path, data_dir)  # where load_table reads it
        if p.is_file():
            spec["table"] = (str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns)
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


#: Pools already read in this process, by file and its (size, mtime): a sweep of hundreds of
#: jobs in one process reads each pool file once. Pools are never mutated.
_READ: dict[Path, tuple[tuple[int, int], Pool]] = {}


def load_pool(path: Path) -> Pool | None:
    """A pool file, checked against its content hash; None when missing or damaged."""
    try:
        stat = path.stat()
    except OSError:
        return None
    stamp = (stat.st_size, stat.st_mtime_ns)
    seen = _READ.get(path)
    if seen and seen[0] == stamp:
        return seen[1]
    pool = _read_pool(path)
    if pool is not None:
        _READ[path] = (stamp, pool)
    return pool


def _read_pool(path: Path) -> Pool | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        instances = [Instance(*x) for x in raw["instances"]]
        meta = PoolMeta(**raw["meta"])
        pool = Pool(meta.task, (meta.labels[0], meta.labels[1]), instances, raw["version"], meta)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    expected = pool_version(f"{pool.task}+filtered" if meta.filtered else pool.task, pool.labels, instances)
    return pool if pool.version == expected else None


def save_pool(pool: Pool, path: Path) -> None:
    payload = {
        "version": pool.version,
        "meta": asdict(pool.meta),
        "instances": [[x.id, x.text, x.label, x.target] for x in pool.instances],
    }
    atomic_write(path, json.dumps(payload, ensure_ascii=False))


def build_pool(cfg: TaskConfig, data_dir: str | Path | None, cache_dir: str | Path | None) -> Pool:
    """Load, label, deduplicate and sample a task's pool, or return it from the cache."""
    if cfg.source.loader not in LOADERS:
        raise DataError(f"Task {cfg.name!r}: unknown loader {cfg.source.loader!r}; choose one of {', '.join(LOADERS)}.")
    root = Path(data_dir).expanduser().resolve() if data_dir else None
    if root is not None and not root.is_dir():
        raise DataError(f"data_dir={data_dir} is not a folder. Point it at a folder laid out as shared/data/raw.")
    if cache_dir is None:
        return sample_pool(cfg, LOADERS[cfg.source.loader](cfg, root))
    path = Path(cache_dir).expanduser() / "pools" / cfg.name / f"{_fingerprint(cfg, root)}.json"
    if (pool := load_pool(path)) is not None:
        return pool
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if (pool := load_pool(path)) is not None:  # another job built it meanwhile
            return pool
        pool = sample_pool(cfg, LOADERS[cfg.source.loader](cfg, root))
        save_pool(pool, path)
        stat = path.stat()
        _READ[path] = ((stat.st_size, stat.st_mtime_ns), pool)
    return pool
