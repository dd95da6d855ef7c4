"""A task as the config folder ships it (``conf/task/<name>.yaml``), composed by name: what a
:class:`mip.tools.prompt_source.Rebuilder` rebuilds a stored record's prompt from where no job
folder holds the task config its job ran with. Each task file is composed once a process.

    rebuild = Rebuilder(job_tasks, results_dir, cache_dir, shipped(conf_dir))   # mip.show, report.html

>>> shipped("no/such/conf")("arith")
Traceback (most recent call last):
mip.tools.prompt_source.ShowError: Task 'arith': no config folder no/such/conf/task; run from the repository ...

Exercised by ``pytest tests/test_report_scale.py tests/test_package.py tests/test_show.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mip.config import TaskConfig
from mip.tools.prompt_source import ShowError


def shipped(conf_dir: str | Path) -> Callable[[str], TaskConfig]:
    """The tasks of the config folder ``conf_dir`` by name (:func:`shipped_config`)."""
    return functools.partial(shipped_config, conf_dir=Path(conf_dir))


def shipped_config(name: str, conf_dir: Path) -> TaskConfig:
    """The task as ``conf_dir/task/`` ships it, composed by name (the tasks ``task/all.yaml`` lists from
    its one composition, so a store of the paper's five composes once, not five times)."""
    from omegaconf import OmegaConf

    folder = conf_dir.expanduser() / "task"
    if not folder.is_dir():
        raise ShowError(f"Task {name!r}: no config folder {folder}; run from the repository folder, pass "
                        "--conf <repository>/conf, or pass the job folder instead of the key.")
    together = ["all"] if name in _listed(folder / "all.yaml") else []  # the paper's five: one composition
    candidates = [*together, name] + [f.stem for f in sorted(folder.glob("*.yaml")) if f.stem not in (name, "all")]
    for option in candidates:
        if (folder / f"{option}.yaml").is_file() and name in (tasks := conf_tasks(str(conf_dir.expanduser()), option)):
            return OmegaConf.to_object(tasks[name])
    raise ShowError(f"No task config named {name!r} in {folder}; pass the job folder instead of the key.")


@functools.lru_cache(maxsize=None)
def _listed(path: Path) -> tuple[str, ...]:
    """The task files a group file such as ``task/all.yaml`` composes (its defaults list)."""
    import yaml

    try:
        defaults = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("defaults") or []
    except (OSError, yaml.YAMLError):
        return ()
    return tuple(d for d in defaults if isinstance(d, str))


@functools.lru_cache(maxsize=None)
def conf_tasks(conf_dir: str, option: str) -> Mapping[str, Any]:
    """The tasks ``task=<option>`` composes from the config folder ``conf_dir``, composed once a
    process (empty where it needs what this machine lacks)."""
    from mip.entry import config_store

    try:
        return config_store.compose_conf(conf_dir, f"task={option}").task
    except Exception:  # noqa: BLE001 - a task file that needs what this machine lacks
        return {}
