"""A stored record's prompt rebuilt, as ``python -m mip.show`` and report.html's record pages
show it: the record's task config (the job folder's own copy, else ``conf/task/`` composed by
name with the changes the record says its job made to it), its pool (a cached or filtered pool
file of its version, else the pool built again), and the prompt rebuilt from both and checked
against the record's hash (:func:`mip.strategies.rebuild.rebuild_prompt`).

    rebuild = Rebuilder(job_tasks, results_dir, cache_dir, conf_dir)   # the paths group's folders
    prompt, how = rebuild(record)          # (None, "not rebuilt: …") where it cannot be

Exercised by ``pytest tests/test_show.py tests/test_html_report.py``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mip.config import TaskConfig
from mip.experiment.records import Record
from mip.job.task_changes import applied


class ShowError(Exception):
    """What went wrong, in one line that says what to do."""


def task_config(name: str, job_tasks: dict[str, dict], conf_dir: Path,
                changed: Mapping[str, Any] | None = None) -> TaskConfig:
    """The task's config: the job's own copy when at hand, else ``conf_dir/task/`` composed by name
    with ``changed`` applied (a record's ``config["task"]``: :func:`mip.job.task_changes.applied`).
    Each task file is composed once a process (:func:`conf_tasks`; the tasks ``task/all.yaml`` lists
    from its one composition, so a store of the paper's five composes once, not five times)."""
    if name in job_tasks:
        from omegaconf import OmegaConf

        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TaskConfig), job_tasks[name]))
    return applied(shipped_config(name, conf_dir), changed or {})


def task_changes_of(record: Record) -> dict[str, Any]:
    """What the record's job changed in its task config (empty as shipped, and for records stored before
    records held it)."""
    changed = record.config.get("task")
    return changed if isinstance(changed, dict) else {}


def shipped_config(name: str, conf_dir: Path) -> TaskConfig:
    """The task as ``conf_dir/task/`` ships it, composed by name."""
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
def conf_tasks(conf_dir: str, option: str):
    """The tasks ``task=<option>`` composes from the config folder ``conf_dir``, composed once a
    process (empty where it needs what this machine lacks)."""
    from mip.tools.config_store import compose_conf

    try:
        return compose_conf(conf_dir, f"task={option}").task
    except Exception:  # noqa: BLE001 - a task file that needs what this machine lacks
        return {}


def pool_for(record: Record, task: TaskConfig, results_dir: Path, cache_dir: Path):
    """The pool the record was drawn from: a cached or filtered pool file of that version,
    else the pool built again from the task's source."""
    from mip.data import build_pool
    from mip.data.pools import load_pool

    name = record.experiment.task
    files = (sorted((results_dir / "pools" / name).glob("filtered-*.json"))
             + sorted((cache_dir / "pools" / name).glob("*.json")))
    for path in files:
        if _version(path) == record.pool_version and (pool := load_pool(path)) is not None:
            return pool
    pool = build_pool(task, record.config.get("data_dir"), cache_dir)
    if pool.version != record.pool_version:
        kind = "filtered pool" if record.pool_filtered else "pool"
        raise ShowError(f"The {kind} {record.pool_version} of record {record.key} is not under {results_dir / 'pools'} "
                        f"or {cache_dir / 'pools'}, and building task {name!r} again gives pool {pool.version}.")
    return pool


def _version(path: Path) -> str | None:
    """A pool file's version, read from its first bytes (the field comes first)."""
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(200)
    except OSError:
        return None
    start = head.find('"version": "')
    return head[start + 12:head.find('"', start + 12)] if start >= 0 else None


class Rebuilder:
    """Prompts rebuilt, with each (task, pool version) loaded once — or found missing once: mip.show
    (one for all the records it prints) and report.html's record pages (``Rebuilder.maker(cache_dir,
    conf_dir)`` is what :func:`mip.analysis.analyze.analyze` takes as ``prompts``; the rebuilders it
    makes, one per folder read, share what they loaded).

    The task config is the job's own copy where the folder read holds one, else the shipped task with
    the record's changes. A folder of several jobs holds one copy a task (the last job's read): a record
    of another job, whose prompt that copy does not rebuild, is rebuilt from the shipped task with its
    own changes."""

    @classmethod
    def maker(cls, cache_dir: Path, conf_dir: Path):
        loaded: dict[tuple, tuple | str] = {}
        return lambda tasks, results_dir: cls(tasks, Path(results_dir), Path(cache_dir), Path(conf_dir), loaded)

    def __init__(self, tasks: dict[str, dict], results_dir: Path, cache_dir: Path, conf_dir: Path,
                 loaded: dict[tuple, tuple | str] | None = None):
        self.tasks, self.results_dir, self.cache_dir, self.conf_dir = tasks, results_dir, cache_dir, conf_dir
        self.loaded = {} if loaded is None else loaded
        """(task, pool version, where from, which task config) → (task config, pool), or why they could not be had."""

    def __call__(self, record: Record) -> tuple[str | None, str]:
        from mip.data import DataError
        from mip.strategies.rebuild import rebuild_prompt

        name = record.experiment.task
        sources = [{name: self.tasks[name]}] if name in self.tasks else []
        why: list[str] = []
        for job_tasks in [*sources, {}]:  # the job's own copy, then the shipped task and the record's changes
            loaded = self._load(record, job_tasks)
            if not isinstance(loaded, str):
                try:
                    return rebuild_prompt(record, *loaded), "rebuilt from the record and its pool; hash checked"
                except (ValueError, DataError) as e:
                    loaded = str(e)
            why.append(loaded)
        return None, f"not rebuilt: {why[0]}"  # the job's own copy's reason, where there is one

    def _load(self, record: Record, job_tasks: dict[str, dict]) -> tuple | str:
        """The record's task config and pool (:func:`task_config`, :func:`pool_for`), or why not: once each."""
        from mip.data import DataError

        name, changed = record.experiment.task, task_changes_of(record)
        source = ("job", job_tasks[name]) if job_tasks else ("changed", changed)
        which = (name, record.pool_version, str(self.results_dir), json.dumps(source, sort_keys=True, default=str))
        if which not in self.loaded:
            try:
                task = task_config(name, job_tasks, self.conf_dir, changed)
                self.loaded[which] = (task, pool_for(record, task, self.results_dir, self.cache_dir))
            except (ShowError, ValueError, DataError) as e:
                self.loaded[which] = str(e)
        return self.loaded[which]
