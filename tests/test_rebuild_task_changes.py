"""A record whose job changed its task config rebuilds its exact prompt from the store alone.

Records carry what their task config changed from the shipped task file (``config.task``:
:mod:`mip.job.task_changes`). Where no job folder is at hand (a key looked up in the store, a
report read from the store), ``python -m mip.show`` and report.html's record pages rebuild the
prompt from ``conf/task/`` with those changes applied, and check it against the stored hash.
The task file is still composed once per process, not once per record.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from mip.analysis.analyze import analyze
from mip.analysis.report import figures
from mip.entry.shipped_tasks import shipped
from mip.entry.show_command import main as show_main
from mip.job import run_job
from mip.store import Store
from mip.tools.prompt_source import Rebuilder

from .conftest import REPO, compose, unencoded, vary
from .test_report_scale import counted  # noqa: F401 - fixture

LABELS = "task.arith.labels=['even number','odd number']"
PROMPT = "task.arith.prompt.task='Decide which parity most of the numbers have.'"
REBUILT = "rebuilt from the record and its pool; hash checked"


@pytest.fixture(scope="module")
def changed(tmp_path_factory):
    """The arith task as shipped, with other labels, and with another task sentence, one job each
    (a key looked up in the store and a report of the store read no job folder)."""
    tmp = tmp_path_factory.mktemp("changed")
    for name, extra in [("default", ()), ("labels", (LABELS,)), ("prompt", (PROMPT,))]:
        base = compose("model=simulated_first_k", "model.read_first=9", "task=arith", "n=20", "p=0.6", "budget=20k",
                       *extra, "progress=false", f"paths.results_dir={tmp}", f"paths.cache_dir={tmp / 'cache'}")
        assert run_job(vary(base, pattern="majority_first", seed=0), tmp / "jobs" / name).ok
    records = {}
    for record in Store(tmp / "store"):
        change = record.config.get("task") or {}
        kind = "labels" if "arith.labels" in change else "prompt" if "arith.prompt.task" in change else "default"
        records.setdefault(kind, []).append(record)
    assert sorted(records) == ["default", "labels", "prompt"] and all(len(r) == 2 for r in records.values())
    return tmp, records


def _show(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = show_main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("kind", ["labels", "prompt", "default"])
def test_mip_show_rebuilds_a_store_only_record_of_a_changed_task(changed, kind):
    """By key, with no job folder: the record's task changes are applied to ``conf/task/arith.yaml``."""
    tmp, records = changed
    for record in records[kind]:
        code, out, err = _show(record.key, f"store={tmp / 'store'}", f"cache_dir={tmp / 'cache'}",
                               f"conf={REPO / 'conf'}")
        assert code == 0, err
        assert f"== record {record.key}" in out and "hash checked" in out
    if kind == "labels":
        assert 'Choose exactly one label from: "even number", "odd number".' in out


def test_a_changed_task_rebuilds_even_where_its_pool_is_built_again(changed, tmp_path):
    """No pool file at hand: the pool is built from the task with the record's changes applied."""
    tmp, records = changed
    for kind in ("labels", "prompt"):
        code, out, err = _show(records[kind][0].key, f"store={tmp / 'store'}", f"cache_dir={tmp_path / 'empty'}",
                               f"conf={REPO / 'conf'}")
        assert code == 0 and "hash checked" in out, err


def test_report_record_pages_rebuild_changed_tasks_with_one_composition(changed, counted):  # noqa: F811
    """report.html read from the store: every record page, changed tasks' included, is rebuilt and
    hash-checked, and ``task=arith`` is composed once for the three task configs."""
    tmp, records = changed
    _pages_rebuilt(_report(tmp, tmp / "store", "store-report"), records)
    assert counted == [(str(REPO / "conf"), "task=arith")], counted


def _report(tmp, folder, out: str):
    cfg = compose(f"results=[{folder}]", f"out_dir={tmp / out}", "core=[20,0.6]",
                  f"paths.results_dir={tmp}", f"paths.cache_dir={tmp / 'cache'}",
                  f"coverage.model_dir={REPO / 'conf' / 'model'}", config_name="analyze")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save", unencoded)
        return analyze(cfg, prompts=Rebuilder.maker(cfg.paths.cache_dir, shipped(REPO / "conf"))).parent


def _pages_rebuilt(report, records) -> None:
    for kind, made in records.items():
        for record in made:
            page = report / "records" / record.key[:2] / f"{record.key}.html"
            assert REBUILT in page.read_text(encoding="utf-8"), (kind, page)


def test_a_change_the_task_file_cannot_take_is_said_in_one_line(changed):
    """A change naming a field the shipped task no longer has: the page and mip.show say so."""
    tmp, records = changed
    record = records["labels"][0]
    odd = record.model_copy(update={"config": {**record.config, "task": {"arith.prompt.gone": "x"}}})
    prompt, how = Rebuilder({}, tmp, tmp / "cache", shipped(REPO / "conf"))(odd)
    assert prompt is None and how.startswith("not rebuilt: ") and "prompt.gone" in how and "\n" not in how


def test_a_folder_of_jobs_that_changed_the_task_differently_rebuilds_each_record(changed):
    """A folder holding the default job and the changed ones, given to mip.show and analyze.py: each
    record is rebuilt with its own task config, not the one job's copy read for the task."""
    tmp, records = changed
    code, out, err = _show(str(tmp / "jobs"), "--all", f"cache_dir={tmp / 'cache'}", f"conf={REPO / 'conf'}")
    assert code == 0, err
    assert out.count("hash checked") == 6
    _pages_rebuilt(_report(tmp, tmp / "jobs", "jobs-report"), records)
