"""python -m mip.show on records made by a real (mock-model) run: by key, prefix, job folder, store."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys

import pytest

from mip.store import Store
from mip.entry.show_command import main
from mip.tools.record_view import clipped

from . import stored
from .conftest import REPO, run_entry


def show_command(*args: str) -> subprocess.CompletedProcess:
    """`python -m mip.show args`, as a user types it."""
    return subprocess.run([sys.executable, "-m", "mip.show", *args], cwd=REPO, env=os.environ.copy(),
                          capture_output=True, text=True, timeout=300)


def show(*args: str) -> subprocess.CompletedProcess:
    """mip.show's main with the same arguments, in this process: what the command prints and
    returns less an interpreter start (the first test runs the command itself)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["mip.show", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One run.py job (the mock model, two records) for the module; each test gets a copy."""
    results = tmp_path_factory.mktemp("show") / "results"
    proc = run_entry("run.py", "model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first",
                     "progress=false", env={"MIP_RESULTS_DIR": str(results)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return results


@pytest.fixture
def job(made, results):
    shutil.copytree(made, results)
    records = sorted(Store(results / "store"), key=lambda r: r.key)
    assert len(records) == 2
    (folder,) = [p.parent for p in results.rglob("job.json")]
    return folder, records


def test_a_key_prints_the_rebuilt_prompt_every_attempt_and_the_verdict(job):
    _, records = job
    record = records[0]
    proc = show_command(record.key)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"== record {record.key}" in out and "hash checked" in out
    assert "Instance 1:" in out and "Instance 10:" in out  # the prompt itself, rebuilt
    assert f"verdict: {record.verdict}" in out and "-- attempt 1 of 1:" in out
    assert "finish " in out and "output:" in out and record.attempts[0].stages[0].output in out


def test_a_key_prefix_and_a_store_folder_given_with_store_equals(job, results, tmp_path, monkeypatch):
    _, records = job
    monkeypatch.setenv("MIP_RESULTS_DIR", str(tmp_path / "elsewhere"))  # the default store is empty now
    proc = show(records[1].key[:8], f"store={results / 'store'}")
    assert proc.returncode == 0, proc.stderr
    assert f"== record {records[1].key}" in proc.stdout


def test_a_job_folder_lists_its_records_and_prints_each_with_all(job):
    folder, records = job
    proc = show(str(folder))
    assert proc.returncode == 0, proc.stderr
    assert "2 records:" in proc.stdout and proc.stdout.count("== record") == 1
    assert all(r.key in proc.stdout for r in records)
    every = show(str(folder), "--all")
    assert every.returncode == 0 and every.stdout.count("== record") == 2


def test_all_records_of_a_folder_share_one_pool_load(job, monkeypatch):
    """--all rebuilds every record's prompt with one Rebuilder: records of one task and pool version
    load that pool once, not once a record."""
    from mip.tools import prompt_source

    folder, records = job
    loads = []
    real = prompt_source.pool_for
    monkeypatch.setattr(prompt_source, "pool_for", lambda record, *a: loads.append(record.key) or real(record, *a))
    assert len({(r.experiment.task, r.pool_version) for r in records}) == 1 < len(records)
    proc = show(str(folder), "--all")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("== record") == len(records) and proc.stdout.count("hash checked") == len(records)
    assert len(loads) == 1


def test_a_pack_file_shows_its_records(job, results):
    """docs/store.md: a pack's records, read by hand."""
    _, records = job
    (pack,) = (results / "store").rglob("pack-*.jsonl")
    proc = show(str(pack), "--all")
    assert proc.returncode == 0, proc.stderr
    assert "2 records:" in proc.stdout and proc.stdout.count("== record") == 2 and "hash checked" in proc.stdout


def test_unknown_and_ambiguous_keys_are_one_line_errors(job, results):
    _, records = job
    unknown = show("0123456789abcdef")
    assert unknown.returncode == 2 and unknown.stderr.strip().count("\n") == 0
    assert "No record with key '0123456789abcdef'" in unknown.stderr
    line = next(e for e in stored.entries(results / "store") if e.key == records[0].key)
    other = records[0].key[:6] + "f" * 18  # a record file of a store written before packs
    (line.path.parent / f"{other}.json").write_bytes(line.data.replace(records[0].key.encode(), other.encode()))
    ambiguous = show(records[0].key[:6])
    assert ambiguous.returncode == 2 and "matches 2 records" in ambiguous.stderr and "more characters" in ambiguous.stderr
    missing = show("no/such/folder")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_a_record_whose_pool_cannot_be_found_says_so(job, results):
    _, records = job
    line = next(e for e in stored.entries(results / "store") if e.key == records[0].key)
    line.overwrite(line.data.replace(records[0].pool_version.encode(), b"0" * len(records[0].pool_version)))
    proc = show(records[0].key)
    assert proc.returncode == 2 and "building task 'arith' again gives pool" in proc.stderr


def test_long_texts_show_head_and_tail_unless_full():
    text = "\n".join(f"line {i}" for i in range(100))
    short = clipped(text, full=False)
    assert "line 0" in short and "line 99" in short and "line 50" not in short and "76 lines left out" in short
    assert clipped(text, full=True) == text


def test_a_record_from_a_filtered_pool_is_rebuilt_from_that_pool(results):
    """A filtered pool lives under <results>/pools/<task>/; the record names its version."""
    from mip.data import build_pool
    from mip.data.pools import save_pool
    from mip.tools.filtering import filtered_path, filtered_pool

    from .conftest import compose

    cfg = compose("task=arith")
    pool = build_pool(cfg.task["arith"], None, cfg.paths.cache_dir)
    keep = {x.id: i % 3 != 0 for i, x in enumerate(pool.instances)}  # drop a third: a pool of its own version
    filtered = filtered_pool(pool, {"m": keep}, ["m"])
    save_pool(filtered, filtered_path(results, "arith", pool.version))
    proc = run_entry("run.py", "model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_last",
                     "progress=false")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = [r for r in Store(results / "store") if r.experiment.majority_label == "odd_number"]
    assert record.pool_filtered and record.pool_version == filtered.version
    shown = show(record.key)
    assert shown.returncode == 0, shown.stderr
    assert "(filtered)" in shown.stdout and "hash checked" in shown.stdout


def test_a_store_folder_given_as_the_target_lists_its_records(job, results):
    _, records = job
    proc = show(str(results / "store"))
    assert proc.returncode == 0, proc.stderr
    assert "2 records:" in proc.stdout and all(r.key in proc.stdout for r in records)


def test_a_reasoning_trace_and_its_token_count_are_printed(job):
    from mip.tools.record_view import render

    _, records = job
    record = records[0]
    attempt = record.attempts[0]
    stage = attempt.stages[0].model_copy(update={"reasoning": "First I count the instances labelled even.",
                                                 "reasoning_tokens": 9})
    traced = record.model_copy(update={"attempts": [attempt.model_copy(update={"stages": [stage]})]})
    text = render(traced, "the prompt", False)
    assert "reasoning:" in text and "First I count the instances labelled even." in text
    assert "reasoning 9" in text
    assert "reasoning:" not in render(record, "the prompt", False)  # no trace, no heading


def test_the_default_store_comes_from_the_paths_group_of_the_conf_folder(job, tmp_path):
    """The store a key is looked up in is ``paths.store_dir`` of ``--conf``'s paths group (the
    one home of that rule; MIP_RESULTS_DIR moves it, as the first test's key lookup shows). A
    config folder without that group is said, with what to pass instead."""
    _, records = job
    proc = show(records[0].key[:8], "--conf", str(tmp_path))
    assert proc.returncode == 2 and "paths/default.yaml is missing: pass --conf" in proc.stderr
    own = tmp_path / "conf"
    shutil.copytree(REPO / "conf" / "paths", own / "paths")
    (own / "paths" / "default.yaml").write_text("results_dir: elsewhere\nstore_dir: ${paths.results_dir}/store\n"
                                                "cache_dir: ~/.cache/mip\n")
    proc = show(records[0].key[:8], "--conf", str(own))
    assert proc.returncode == 2 and "No store at elsewhere/store" in proc.stderr
    (own / "paths" / "default.yaml").write_text("results_dir: elsewhere\n")
    proc = show(records[0].key[:8], "--conf", str(own))
    assert proc.returncode == 2 and "does not give paths.store_dir and paths.cache_dir" in proc.stderr


def test_a_job_folder_needs_no_paths_group(job, tmp_path):
    """A job folder names its store and the pool cache its job used (its config.yaml): shown
    from anywhere, with a --conf that has no paths group (the task's config is the job's own)."""
    folder, records = job
    proc = show(str(folder), "--conf", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "== record " in proc.stdout and "hash checked" in proc.stdout  # the prompt rebuilt from the job's pool


HOSTILE = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[1A\x1b[2Kverdict: correct\r\x9b2J\u202eevil"


def test_a_reply_holding_terminal_control_codes_prints_none_raw(job, results):
    """A hostile reply cannot clear the screen, set the title, erase lines or forge a verdict:
    mip.show and mip.summary print its control characters escaped."""
    from mip.entry.summary_command import main as summary_main

    folder, records = job
    attempt = records[0].attempts[0]
    stage = attempt.stages[0].model_copy(update={"output": HOSTILE, "reasoning": HOSTILE})
    hostile = records[0].model_copy(update={"attempts": [attempt.model_copy(update={"stages": [stage],
                                                                                      "answer": HOSTILE})]})
    for pack in (results / "store").rglob("pack-*.jsonl"):
        pack.unlink()
    store = Store(results / "store")
    store.put(hostile), store.put(records[1])
    store.close()
    shown = [show(hostile.key), show(str(folder), "--all")]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        summary_main([str(folder)])
    printed = "".join(p.stdout + p.stderr for p in shown) + out.getvalue() + err.getvalue()
    assert all(p.returncode == 0 for p in shown), shown[0].stderr
    assert "\\x1b[2J" in shown[0].stdout  # shown, escaped
    assert [c for c in ("\x1b", "\x07", "\r", "\x9b", "\u202e") if c in printed] == []


def test_five_thousand_empty_files_cost_one_line_per_folder(job, results):
    """Odd files in a store (5,000 empty ``.json`` files beside a job's pack, 50 in a folder of
    their own) are counted and summarised in one line per folder by mip.show, mip.summary and
    analyze.py; the valid records are read as ever."""
    store = results / "store"
    (task,) = {p.parent for p in store.rglob("pack-*.jsonl")}
    other = task.parent / "other_task"
    other.mkdir()
    for i in range(5000):
        (task / f"empty{i}.json").touch()
    for i in range(50):
        (other / f"empty{i}.json").touch()
    shown = show_command(str(store))
    report = subprocess.run([sys.executable, str(REPO / "analyze.py"), f"results=[{store}]",
                             f"out_dir={results / 'report'}"], cwd=REPO, env=os.environ.copy(), capture_output=True,
                            text=True, timeout=600)
    summary = subprocess.run([sys.executable, "-m", "mip.summary", str(store)], cwd=REPO, env=os.environ.copy(),
                             capture_output=True, text=True, timeout=600)
    for ran in (shown, report, summary):
        assert ran.returncode == 0, ran.stderr[-2000:]
        said = [line for line in (ran.stdout + ran.stderr).splitlines() if "unreadable" in line or ".json" in line]
        assert len(said) == 2, said[:5]
        assert any("5,000 unreadable records" in line and str(task) in line for line in said)
        assert any("50 unreadable records" in line and str(other) in line for line in said)
    assert "2 records" in shown.stdout
