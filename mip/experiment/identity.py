"""What makes two stored records the same experiment, read back from the records themselves.

The store key (:mod:`mip.experiment.keys`) hashes the experiment, its pool and every setting
that shapes its answer, so the same key is the same call. The analysis needs the same rule
from the other side: given records, which are one experiment asked twice (a rerun under
another budget name at the same limit), which were asked under a changed setting (a rerun
with ``model.read_first=5``), and which hold other instances (a pool of another size). Two
columns say it, for every record, in the store's table and in W&B's alike:

- ``settings``: the answer-shaping settings the analysis has no column of its own for, as
  sorted JSON — the keyed fields of the model and strategy configs, by the key's own rule
  (:mod:`mip.experiment.keys`: every field but those declared with
  :func:`mip.config.shaping.setting` and those the experiment holds, such as the names; a
  field at the value every config had before the field was keyed, or unset, is left out, so
  older records read alike). The model's fields go by their names (``read_first``), the
  strategy's under ``strategy.`` (``strategy.batch_size``); and the task's prompt fields (also
  keyed) where they differ from the task's shipped file, under ``task.`` by the name a command
  line overrides them with (``task.ner.labels``; the record holds them as its job found them,
  :mod:`mip.job.task_changes`; a record stored before records held them reads as the task as
  shipped). The budget (a column by its value), the prompt variant and the strategy's name are
  columns of their own.
- ``instances``: a hash of the pool version and the instance IDs drawn (as a set: every
  pattern presents one draw in its own order).

>>> record = {"model": {"name": "m", "read_first": 5, "read_last": None, "max_concurrency": 8}}
>>> settings_of(record)    # the name, an unset field and one declared not answer-shaping aside
'{"read_first": 5}'
>>> settings_of({**record, "strategy": {"name": "decomposed", "batch_size": 5, "max_reasks": 2}})
'{"read_first": 5, "strategy.batch_size": 5}'
>>> settings_of({**record, "task": {"ner.labels": ["A", "B"]}})
'{"read_first": 5, "task.ner.labels": ["A", "B"]}'
>>> differences('{"read_first": 9}', '{"read_first": 5}')
'read_first=5'
>>> differences('{"task.ner.labels": ["A", "B"]}', '{}')
'task.ner.labels=as-shipped'
>>> instances_of("p1", ["b", "a"]) == instances_of("p1", ["a", "b"]) != instances_of("p2", ["a", "b"])
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any

from mip.config import StrategyConfig
from mip.config import model as model_schemas
from mip.config.shaping import not_answer_shaping
from mip.experiment.keys import IN_EXPERIMENT, KEYED_WHEN_SET, SCHEME_2_MODEL_DEFAULTS, SCHEME_2_STRATEGY_DEFAULTS

#: The record-config sections whose keyed fields are settings, each with its schema (a
#: backend's or strategy's own schema extends it) and the prefix its fields go under.
_SECTIONS = {"model": (model_schemas.ModelConfig, ""), "strategy": (StrategyConfig, "strategy.")}


@cache
def _not_shaping(group: str) -> frozenset[str]:
    """Dotted names of a section's fields the key leaves out (declared not answer-shaping, or
    held by the experiment), under any schema of the section."""
    out: set[str] = set(IN_EXPERIMENT[group])
    stack = [_SECTIONS[group][0]]
    while stack:  # a strategy's schema is found once its module is imported; none declares such a field
        schema = stack.pop()
        out |= set(not_answer_shaping(schema))
        stack += schema.__subclasses__()
    return frozenset(out)


def flat(value: Mapping, prefix: str = "") -> dict[str, Any]:
    """A nested mapping's values by dotted name (an empty mapping is a value of its own)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            out.update(flat(item, f"{name}."))
        else:
            out[name] = item
    return out


@cache
def _old_defaults() -> dict[str, Any]:
    """Fields every config held at one value when records began to be stored: a record written
    before its schema had one (no field) and one written after (the value) are alike."""
    strategy = {**SCHEME_2_STRATEGY_DEFAULTS, **KEYED_WHEN_SET.get("strategy", {})}
    strategy = {f"strategy.{k}": v for k, v in strategy.items()}
    return {**flat(SCHEME_2_MODEL_DEFAULTS), **KEYED_WHEN_SET["model"], **strategy}


def _default(name: str, value: Any) -> bool:
    """A value that says nothing was set: empty, or a field's value from before it was keyed."""
    if value is None or value == {} or value == []:
        return True
    old = _old_defaults()
    return name in old and value == old[name]


def settings_of(config: Mapping[str, Any]) -> str:
    """A record's answer-shaping settings beyond its columns (``record.config``), as sorted JSON."""
    out: dict[str, Any] = {}
    for group, (_, prefix) in _SECTIONS.items():
        section = config.get(group) if isinstance(config.get(group), Mapping) else {}
        skip = _not_shaping(group)
        out.update({f"{prefix}{k}": v for k, v in flat(section).items() if k not in skip
                    and not any(k.startswith(f"{s}.") for s in skip) and not _default(f"{prefix}{k}", v)})
    task = config.get("task") if isinstance(config.get("task"), Mapping) else {}  # none before records held it
    out.update({f"task.{k}": v for k, v in task.items()})  # each a change from the shipped file, empty ones too
    return json.dumps(out, sort_keys=True, default=str)


def instances_of(pool_version: str | None, instance_ids: Iterable[str]) -> str:
    """The instance set drawn: its pool version and its instance IDs, hashed."""
    return _set_hash(pool_version, frozenset(instance_ids))  # IDs are strings (Record.instance_ids)


@lru_cache(maxsize=4096)
def _set_hash(pool_version: str | None, ids: frozenset[str]) -> str:
    # The patterns, order seeds, variants and budgets of one draw share it: sorted and hashed once.
    digest = hashlib.sha256(json.dumps(pool_version).encode())
    digest.update("\x00".join(sorted(ids)).encode())
    return digest.hexdigest()[:16]


def differences(reference: str, other: str) -> str:
    """What ``other``'s settings set differently from ``reference``'s (both :func:`settings_of`),
    as ``field=value`` words: the name of a slice run under a changed setting."""
    ref, new = json.loads(reference), json.loads(other)
    changed = sorted(k for k in {*ref, *new} if ref.get(k) != new.get(k))
    return " ".join(f"{k}={_shown(new[k]) if k in new else _unset(k)}" for k in changed)


def _unset(name: str) -> str:
    """A field ``other`` leaves out: a task field as its shipped file has it, else its old default."""
    return "as-shipped" if name.startswith("task.") else _shown(_old_defaults().get(name))


def _shown(value: Any) -> str:
    return "unset" if value is None else json.dumps(value) if isinstance(value, (dict, list)) else str(value)
