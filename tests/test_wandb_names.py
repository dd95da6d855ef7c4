"""W&B as users expect it: an offline run says where its files are and the
`wandb sync` line, once; group, job type and tags name the sweep and the slice, as the
README's filter example does; self-prompting logs both stages' prompts."""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path

from mip.job import run_job

from .conftest import REPO, compose, run_entry
from .test_tracking import tables, wandb_env  # noqa: F401 - fixture
from .wandb_files import run_record

WANDB = Path(sys.executable).with_name("wandb")


def sync_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "wandb sync " in line]


def would_sync(line: str) -> list[str]:
    """The .wandb files `wandb sync` would upload for the command in ``line`` (run by bash, as a user would)."""
    command = line.strip()
    assert command.startswith("wandb sync ")
    proc = subprocess.run(["bash", "-c", f"{WANDB} sync --dry-run {command.removeprefix('wandb sync ')}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return re.findall(r"(\S+\.wandb)$", proc.stdout + proc.stderr, re.M)


def readme_group() -> str:
    (example,) = re.findall(r"python analyze\.py source=wandb .*wandb\.group=(\S+)", (REPO / "README.md").read_text())
    return example


def shape(name: str) -> str:
    """A group name with each hex digit (dates, times, the folder's token) made alike."""
    return re.sub(r"[0-9a-f]", "#", name)


def test_an_offline_run_says_once_where_it_is_and_how_to_sync_it(results, wandb_env):
    ran = run_entry("run.py", "model=mock", "task=arith", "pattern=majority_first", "logger=wandb", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    text = ran.stdout + ran.stderr
    (line,) = sync_lines(text)
    (run_dir,) = results.glob("runs/*/*/wandb/offline-run-*")
    assert f"W&B ran offline: its files are in {run_dir}. Upload them with:\n{line}" in text
    assert [Path(p).name for p in would_sync(line)] == [p.name for p in run_dir.glob("*.wandb")]
    (log,) = results.glob("runs/*/*/run.log")
    assert sync_lines(log.read_text())  # and in the job's log


def test_a_sweep_says_it_once_for_all_its_runs_and_names_sweep_and_slice_as_the_readme_filters(results, wandb_env):
    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "n=20", "pattern=majority_first,majority_last",
                    "logger=wandb", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    (sweep,) = results.glob("sweeps/*/*")
    (line,) = sync_lines(ran.stdout + ran.stderr)  # once, at the end
    files = sorted(sweep.glob("*/wandb/offline-run-*/*.wandb"))
    assert len(files) == 2 and sorted(Path(p).name for p in would_sync(line)) == sorted(f.name for f in files)
    for log in sweep.glob("*/run.log"):
        assert len(sync_lines(log.read_text())) == 1  # each job's log names its own run
    group = sweep.relative_to(results).as_posix()
    assert shape(readme_group()) == shape(group), (readme_group(), group)
    for file in files:
        run = run_record(file)
        assert run.run_group == group
        assert run.job_type == "mock/n=20,p=0.6/smoke/standard/single_call"  # the slice, not setting=smoke
        assert {f"sweep={group}", "mock", "n=20", "p=0.6", "budget=smoke", "variant=standard",
                "strategy=single_call"} <= set(run.tags)
        assert not any(t.startswith("setting=") for t in run.tags)


def test_self_prompting_logs_both_stages_prompts(tmp_path, wandb_env):
    cfg = compose("model=mock", "task=arith", "pattern=majority_first", "prompt_variant=self_prompt", "logger=wandb",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    assert run_job(cfg, tmp_path / "job").stored_now == 2
    (table,) = tables(tmp_path / "job")
    rows = [dict(zip(table["columns"], row)) for row in table["data"]]
    assert len(rows) == 2
    for row in rows:
        (first,) = json.loads(row["earlier_prompts"])
        assert first["stage"] == "instruction" and "Instance 1" not in first["prompt"]  # stage one: write the instruction
        assert "Instance 1" in row["prompt"] and row["prompt"] != first["prompt"]  # stage two: the instances


def test_a_sweep_given_as_a_relative_folder_gets_one_short_sync_line(tmp_path, monkeypatch):
    """Review: the sweep's end passed its folder relative and the runs absolute, so every run
    path was listed twice instead of one `wandb sync <sweep>/*/wandb` line."""
    from mip.tracking.tracker import sync_hint

    monkeypatch.chdir(tmp_path)
    runs = [tmp_path / "sweep" / str(i) / "wandb" / f"offline-run-{i}" for i in range(12)]
    hint = sync_hint(runs, sweep=Path("sweep"))
    assert hint.count("offline-run-") == 0 and hint.endswith("wandb sync sweep/*/wandb")
    assert "the files of its 12 runs are under sweep/*/wandb" in hint
