"""What a job's task config changes from the task's shipped file, for its records to carry.

The store key hashes a task's prompt fields (its labels and App. B texts:
:func:`mip.experiment.keys.task_settings`), so a rerun with ``task.ner.prompt.task='…'`` asks
other experiments. A record says which: ``config["task"]`` holds the keyed fields whose value
differs from the task's shipped file, by dotted name under the task's name, as a command line
overrides them (``{"ner.labels": ["A", "B"]}``); empty for the task as shipped. The shipped file
is ``task/<name>.yaml`` of the config folders the job's own config names (``task_source``: set
by run.py from Hydra's config sources and by :func:`mip.entry.config_store.compose_conf`), so
each job of a process that composed from two folders is read against its own. The analysis reads
the changes as settings (:func:`mip.experiment.identity.settings_of`), so such records form a
slice of their own.

A config that names no folder (built in Python), or whose task is in no file of them, cannot
know what it changed: its records hold every keyed field of the task, a slice of their own
unless a reader knows them to be a shipped file's; :func:`unsourced` says what to pass.

>>> from mip.config import Config, TaskConfig
>>> shipped = TaskConfig(name="t", labels=["a", "b"])
>>> changes(TaskConfig(name="t", labels=["a", "b"]), shipped)
{}
>>> changes(TaskConfig(name="t", labels=["x", "b"]), shipped)
{'t.labels': ['x', 'b']}
>>> changes(TaskConfig(name="t", labels=["x", "b"]), None)["t.labels"]
['x', 'b']
>>> applied(shipped, {"t.labels": ["x", "b"]}).labels
['x', 'b']
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from mip.config import Config, TaskConfig
from mip.experiment.identity import flat
from mip.experiment.keys import task_settings


def changes(task: TaskConfig, shipped: TaskConfig | None) -> dict[str, Any]:
    """The keyed fields of ``task`` whose value differs from ``shipped``'s, sorted by dotted name;
    every keyed field where nothing ships the task (``shipped`` None)."""
    mine = flat(task_settings(task))
    theirs = flat(task_settings(shipped)) if shipped is not None else {}
    return {f"{task.name}.{k}": mine.get(k) for k in sorted({*mine, *theirs}) if mine.get(k) != theirs.get(k)}


def applied(shipped: TaskConfig, changed: Mapping[str, Any]) -> TaskConfig:
    """``shipped`` with ``changed`` (as :func:`changes` writes them) set: the task config the job of a
    record holding those changes ran with. Raises ValueError, naming it, for a change ``shipped`` has no field for."""
    task = shipped
    for name, value in changed.items():
        path = name.split(".")
        if path[0] != shipped.name or len(path) < 2:
            raise ValueError(f"The task change {name!r} is not of task {shipped.name!r}; pass the job folder instead.")
        try:
            task = _set(task, path[1:], copy.deepcopy(value))
        except LookupError:
            raise ValueError(f"The task change {name!r} names no field of task {shipped.name!r} as its file ships "
                             "it now; pass the job folder, whose config.yaml holds the task it ran.") from None
    return task


def _set(obj: Any, path: list[str], value: Any) -> Any:
    """A copy of the dataclass ``obj`` with the field at ``path`` set to ``value`` (LookupError: no such field)."""
    if not dataclasses.is_dataclass(obj) or path[0] not in {f.name for f in dataclasses.fields(obj)}:
        raise LookupError(path[0])
    inner = value if len(path) == 1 else _set(getattr(obj, path[0]), path[1:], value)
    return dataclasses.replace(obj, **{path[0]: inner})


def task_changes(task: TaskConfig, folders: Sequence[str | Path]) -> dict[str, Any]:
    """What ``task`` changes from its shipped file (:func:`changes`): the first file of the config
    folders ``folders`` (a job's ``task_source``) that ships a task of its name; with none, every keyed field."""
    return changes(task, next((t for folder in folders if (t := shipped_task(str(folder), task.name))), None))


def unsourced(cfg: Config) -> str | None:
    """A one-line warning where a job's config names no config folder its tasks came from, so its
    records hold every prompt field of each task (and read as a slice of their own); else None."""
    if cfg.task_source or not cfg.task:
        return None
    return (f"warning: this job's config names no config folder (task_source), so the records of "
            f"{', '.join(sorted(cfg.task))} hold every prompt field of the task and read as a slice of their own; "
            "compose the config with mip.entry.config_store.compose_conf, or set task_source=['<repository>/conf'], "
            "to record only what the task changes from its shipped file.")


@lru_cache(maxsize=None)
def shipped_task(folder: str, name: str) -> TaskConfig | None:
    """The task ``name`` as a file of ``folder/task/`` ships it (``<name>.yaml`` first), or None."""
    from omegaconf import OmegaConf

    files = Path(folder) / "task"
    candidates = [files / f"{name}.yaml", *(f for f in sorted(files.glob("*.yaml")) if f.stem != name)]
    for path in candidates:
        try:
            data = OmegaConf.load(path) if path.is_file() else None
            if data is not None and "defaults" not in data and isinstance(data.get(name), Mapping):
                return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TaskConfig), data[name]))
        except Exception:  # noqa: BLE001 - a file that does not read as a task is not this task's
            continue
    return None
