"""A stored record's prompt rebuilt, as ``python -m mip.show`` and report.html's record pages
show it: the record's task config (the job folder's own copy, else the task as shipped, which the
caller's ``shipped`` gives by name, with the changes the record says its job made to it), its pool
(a cached or filtered pool file of its version, else the pool built again), and the prompt rebuilt
from both and checked against the record's hash (:func:`mip.strategies.rebuild.rebuild_prompt`).

    rebuild = Rebuilder(job_tasks, results_dir, cache_dir, shipped)   # the paths group's folders
    prompt, how = rebuild(record)          # (None, "not rebuilt: …") where it cannot be

The commands pass :func:`mip.entry.shipped_tasks.shipped` (``conf/task/`` composed by name, once a
process): this module composes no config. Exercised by ``pytest tests/test_show.py tests/test_html_report.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mip.config import TaskConfig
from mip.experiment.records import Record
from mip.job.task_changes import applied

#: A task by name as the config folder ships it; raises :class:`ShowError` for one it does not ship.
Shipped = Callable[[str], TaskConfig]


class ShowError(Exception):
    """What went wrong, in one line that says what to do."""


def task_config(name: str, job_tasks: dict[str, dict], shipped: Shipped,
                changed: Mapping[str, Any] | None = None) -> TaskConfig:
    """The task's config: the job's own copy when at hand, else ``shipped(name)`` with ``changed``
    applied (a record's ``config["task"]``: :func:`mip.job.task_changes.applied`)."""
    if name in job_tasks:
        from omegaconf import OmegaConf

        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TaskConfig), job_tasks[name]))
    return applied(shipped(name), changed or {})


def task_changes_of(record: Record) -> dict[str, Any]:
    """What the record's job changed in its task config (empty as shipped, and for records stored before
    records held it)."""
    changed = record.config.get("task")
    return changed if isinstance(changed, dict) else {}


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
    shipped)`` is what :func:`mip.analysis.analyze.analyze` takes as ``prompts``; the rebuilders it
    makes, one per folder read, share what they loaded).

    The task config is the job's own copy where the folder read holds one, else the shipped task with
    the record's changes. A folder of several jobs holds one copy a task (the last job's read): a record
    of another job, whose prompt that copy does not rebuild, is rebuilt from the shipped task with its
    own changes."""

    @classmethod
    def maker(cls, cache_dir: Path, shipped: Shipped):
        loaded: dict[tuple, tuple | str] = {}
        return lambda tasks, results_dir: cls(tasks, Path(results_dir), Path(cache_dir), shipped, loaded)

    def __init__(self, tasks: dict[str, dict], results_dir: Path, cache_dir: Path, shipped: Shipped,
                 loaded: dict[tuple, tuple | str] | None = None):
        self.tasks, self.results_dir, self.cache_dir, self.shipped = tasks, results_dir, cache_dir, shipped
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
                task = task_config(name, job_tasks, self.shipped, changed)
                self.loaded[which] = (task, pool_for(record, task, self.results_dir, self.cache_dir))
            except (ShowError, ValueError, DataError) as e:
                self.loaded[which] = str(e)
        return self.loaded[which]
