"""What a job's task config changes from the task's shipped file, for its records to carry.

The store key hashes a task's prompt fields (its labels and App. B texts:
:func:`mip.experiment.keys.task_settings`), so a rerun with ``task.ner.prompt.task='…'`` asks
other experiments. A record says which: ``config["task"]`` holds the keyed fields whose value
differs from the task file shipped in the config folder (``conf/task/<name>.yaml``), by dotted
name under the task's name, as a command line overrides them (``{"ner.labels": ["A", "B"]}``);
empty for the task as shipped. The analysis reads them as settings
(:func:`mip.experiment.identity.settings_of`), so such records form a slice of their own.

A task found in no task file of the config folders (Hydra's, where the job runs under it, and
the repository's ``conf/``) has nothing to differ from: its changes read empty, as a record
stored before records held them does.

>>> from mip.config import TaskConfig
>>> shipped = TaskConfig(name="t", labels=["a", "b"])
>>> changes(TaskConfig(name="t", labels=["a", "b"]), shipped)
{}
>>> changes(TaskConfig(name="t", labels=["x", "b"]), shipped)
{'t.labels': ['x', 'b']}
>>> changes(TaskConfig(name="t", labels=["x", "b"]), None)
{}
>>> applied(shipped, {"t.labels": ["x", "b"]}).labels
['x', 'b']
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from mip.config import TaskConfig
from mip.experiment.identity import flat
from mip.experiment.keys import task_settings

#: Config folders this process composed from outside a Hydra app (Hydra's own are read from its runtime).
_COMPOSED: list[str] = []


def changes(task: TaskConfig, shipped: TaskConfig | None) -> dict[str, Any]:
    """The keyed fields of ``task`` whose value differs from ``shipped``'s, sorted by dotted name."""
    if shipped is None:
        return {}
    mine, theirs = flat(task_settings(task)), flat(task_settings(shipped))
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


def task_changes(task: TaskConfig) -> dict[str, Any]:
    """What ``task`` changes from its shipped file (:func:`changes`), the file found in the config folders."""
    return changes(task, next((t for folder in conf_folders() if (t := shipped_task(str(folder), task.name))), None))


def conf_folders() -> list[Path]:
    """The config folders a job's tasks come from: Hydra's (``--config-dir`` and search paths
    included) where the job runs under Hydra, then those this process composed a config from with
    Compose API (:func:`composed_from`). The package never looks for a ``conf/`` of its own: a job
    whose config came from neither records no task changes."""
    folders: list[Path] = []
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            sources = HydraConfig.get().runtime.config_sources
            folders = [Path(s.path) for s in sources if s.schema in ("file", "parsed-file")]
    except Exception:  # noqa: BLE001 - no Hydra runtime: the composed folders alone
        folders = []
    return [*folders, *(Path(f) for f in _COMPOSED if Path(f) not in folders)]


def composed_from(folder: str) -> None:
    """Note a config folder this process composed a job's config from (:func:`mip.entry.config_store.compose_conf`)."""
    if folder not in _COMPOSED:
        _COMPOSED.append(folder)


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
