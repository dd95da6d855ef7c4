"""A job's task changes are read against the config folders its own config names (``task_source``).

Each record holds what its job's task config changed from the task's shipped file
(``config.task``, :mod:`mip.job.task_changes`). Which file is the shipped one is the job
config's own: ``task_source`` lists the config folders its tasks were composed from (set by
run.py from Hydra's config sources and by :func:`mip.entry.config_store.compose_conf`), so a
process that composes from two folders reads each job against its own. A config built in Python
that names none cannot know what it changed: its records hold every prompt field of the task (a
slice of their own in the analysis, never pooled with the shipped task's), and the job says so.
"""

from __future__ import annotations

import dataclasses
import shutil

import yaml
from omegaconf import OmegaConf

from mip.analysis.results import load_local
from mip.entry.config_store import compose_conf, load_saved
from mip.job import run_job
from mip.store import Store

from .conftest import REPO, compose, vary

SMALL = ("model=simulated_first_k", "model.read_first=9", "task=arith", "n=20", "p=0.6", "budget=20k",
         "progress=false")
OTHER = ["Even number", "Odd number"]


def _small(tmp, *extra: str) -> tuple[str, ...]:
    return (*SMALL, *extra, f"paths.results_dir={tmp}", f"paths.cache_dir={tmp / 'cache'}")


def _changes(store, folder_of_job) -> list[dict]:
    """The task changes of the records one job stored (its keys, from its job.json)."""
    import json

    keys = set(json.loads((folder_of_job / "job.json").read_text())["keys"])
    return [r.config["task"] for r in Store(store) if r.key in keys]


def test_a_python_built_config_with_changed_labels_is_its_own_slice(tmp_path, capsys):
    """A script that builds its Config in Python (no config folder named) and changes the labels:
    its records are not read as the shipped task's, so the analysis shows two slices, and the job
    says what to pass. Named, the same config's records hold only what it changes."""
    base = vary(compose(*_small(tmp_path)), pattern="majority_first", seed=0)
    assert base.task_source == [str(REPO / "conf")]
    assert run_job(base, tmp_path / "jobs" / "shipped").ok
    arith = dataclasses.replace(base.task["arith"], labels=OTHER)
    built = dataclasses.replace(base, task={"arith": arith}, task_source=[])  # as a script builds it
    capsys.readouterr()
    assert run_job(built, tmp_path / "jobs" / "built").ok
    said = capsys.readouterr().err
    assert "task_source" in said and "arith" in said and "compose_conf" in said, said
    held = _changes(tmp_path / "store", tmp_path / "jobs" / "built")
    assert len(held) == 2 and all(h["arith.labels"] == OTHER and "arith.prompt.task" in h for h in held), held
    frame = load_local([tmp_path / "store"])
    assert len(frame) == 4 and not any("duplicate" in note for note in frame.attrs["notes"])
    slices = frame["model"].value_counts().to_dict()
    assert slices["simulated_first_k"] == 2 and len(slices) == 2, slices
    other = next(name for name in slices if name != "simulated_first_k")
    assert 'task.arith.labels=["Even number", "Odd number"]' in other, other
    named = dataclasses.replace(built, task_source=[str(REPO / "conf")], seed=1)
    assert run_job(named, tmp_path / "jobs" / "named").ok
    assert _changes(tmp_path / "store", tmp_path / "jobs" / "named") == [{"arith.labels": OTHER}] * 2


def test_a_shipped_task_built_in_python_is_not_pooled_with_an_unknown_reference(tmp_path, capsys):
    """The shipped task itself, from a config that names no folder: the job cannot know it is
    the shipped one, so its records hold the task's prompt fields (a slice of their own), and it
    runs (a legitimate Python-API run is never refused)."""
    base = vary(compose(*_small(tmp_path)), pattern="majority_first", seed=0)
    assert run_job(dataclasses.replace(base, task_source=[]), tmp_path / "jobs" / "built").ok
    held = _changes(tmp_path / "store", tmp_path / "jobs" / "built")
    assert held and all(h["arith.labels"] == ["even_number", "odd_number"] for h in held), held
    assert "task_source" in capsys.readouterr().err


def test_two_config_folders_in_one_process_read_each_job_against_its_own(tmp_path):
    """A user's config folder whose arith.yaml ships other labels, then the repository's conf/,
    composed in one process: each job's changes are read against the folder it came from."""
    user = tmp_path / "user_conf"
    shutil.copytree(REPO / "conf", user)
    task_file = user / "task" / "arith.yaml"
    task_file.write_text(task_file.read_text().replace("labels: [even_number, odd_number]",
                                                       'labels: ["Even number", "Odd number"]'))
    mine = OmegaConf.to_object(compose_conf(user, *_small(tmp_path), "pattern=majority_first"))
    assert mine.task_source == [str(user)] and mine.task["arith"].labels == OTHER
    assert run_job(mine, tmp_path / "jobs" / "user").ok
    theirs = OmegaConf.to_object(compose_conf(REPO / "conf", *_small(tmp_path), "pattern=majority_first"))
    assert theirs.task_source == [str(REPO / "conf")]
    assert run_job(theirs, tmp_path / "jobs" / "repo").ok
    relabelled = OmegaConf.to_object(compose_conf(REPO / "conf", *_small(tmp_path), "pattern=majority_first",
                                                  "task.arith.labels=['Even number','Odd number']"))
    # the user folder's experiments again (the store key holds no task_source): found stored
    summary = run_job(relabelled, tmp_path / "jobs" / "repo-relabelled")
    assert summary.already_stored == summary.experiments == 2
    assert run_job(dataclasses.replace(relabelled, seed=1), tmp_path / "jobs" / "repo-relabelled-1").ok
    store = tmp_path / "store"
    assert _changes(store, tmp_path / "jobs" / "user") == [{}, {}]
    assert _changes(store, tmp_path / "jobs" / "repo") == [{}, {}]
    assert _changes(store, tmp_path / "jobs" / "repo-relabelled-1") == [{"arith.labels": OTHER}] * 2


def test_the_task_source_is_saved_and_an_older_config_yaml_without_it_still_loads(tmp_path):
    """The job's config.yaml holds its task_source (where its task reference lives); a config.yaml
    written before configs held one loads as before, with none."""
    base = vary(compose(*_small(tmp_path)), pattern="majority_first", seed=0)
    folder = tmp_path / "jobs" / "one"
    assert run_job(base, folder).ok
    saved = yaml.safe_load((folder / "config.yaml").read_text())
    assert saved["task_source"] == [str(REPO / "conf")]
    del saved["task_source"]
    (folder / "config.yaml").write_text(yaml.safe_dump(saved))
    older = load_saved(folder / "config.yaml")
    assert older.task_source == [] and older.task == base.task and older.model == base.model
