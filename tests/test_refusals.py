"""Every mistake is one line: it names the key and what to do,
exits 2, and leaves no job folder behind (mip.entry.overrides, mip.entry.refusals, mip.entry.hydra_callbacks)."""

from __future__ import annotations

import importlib.util

import pytest

from .conftest import run_entry


def folders(results) -> list[str]:
    """Everything a run left under the results folder but the store and the write check."""
    if not results.exists():
        return []
    return sorted(str(p.relative_to(results)) for p in results.rglob("*")
                  if p.is_file() and "store" not in p.relative_to(results).parts)


def one_line_refusal(ran, *words: str) -> str:
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("args,words", [
    (("model=mock", "model.max_concurrency=4"), ("max_concurrency", "model=mock --cfg job")),
    (("n=abc",), ("n=abc", "whole number")),
    (("p=half",), ("p=half", "a number")),
    (("dry_run=maybe",), ("dry_run", "true or false")),
    (("order_seeds=abc",), ("order_seeds", "[0,1,2]")),
    (("model=gpt54_nano", "model.max_concurrency=many"), ("model.max_concurrency", "whole number")),
    (("model=../../etc",), ("model", "../../etc", "choose one of", "gpt54_nano")),
    (("task=a/b",), ("task", "a/b", "choose one of", "arith")),
    (("task=../task/arith",), ("task", "../task/arith", "choose one of")),
    (("task=math,nerr",), ("nerr", "did you mean ner")),
    (("+experiment=cor",), ("experiment", "did you mean core")),
    (("pattern=glob(*",), ("pattern=glob(*", "quote")),
])
def test_a_wrong_value_is_one_line_before_hydra_composes(results, args, words):
    ran = run_entry("run.py", *args)
    one_line_refusal(ran, *words)
    assert folders(results) == []


@pytest.mark.parametrize("args,words", [
    (("order_seeds=[]",), ("order_seeds", "e.g. order_seeds=[0,1,2]")),
    (("n=0",), ("n must be at least 2",)),
    (("p=1.5",), ("strictly between 0.5 and 1",)),
    (("model=mock", "budget.max_tokens=0"), ("budget.max_tokens",)),
])
def test_a_refused_run_leaves_no_job_folder(results, args, words):
    ran = run_entry("run.py", "model=mock", *args)
    one_line_refusal(ran, *words)
    assert folders(results) == []


def test_a_refused_sweep_job_leaves_no_sweep_folder(results):
    """n is swept, so each job checks its own value: the first is refused, and neither its
    folder nor the sweep's stays."""
    ran = run_entry("run.py", "-m", "model=mock", "n=0,10")
    one_line_refusal(ran, "n must be at least 2")
    assert folders(results) == []


def test_a_refused_sweep_is_refused_before_any_job(results):
    ran = run_entry("run.py", "-m", "model=mock", "order_seeds=[]", "pattern=glob(*)")
    assert one_line_refusal(ran, "order_seeds").endswith("Nothing was launched.")
    assert folders(results) == []


@pytest.mark.parametrize("swept,words", [("p=0.6,1.5", ("p=1.5",)), ("n=10,11", ("n=11", "whole number"))])
def test_a_sweep_whose_later_job_would_be_refused_runs_no_job_at_all(results, swept, words):
    """Review: `-m model=mock p=0.6,1.5` ran (and would have paid for) job 0 before job 1 was
    refused. Every distinct setting a sweep gives its jobs is checked before any launches."""
    ran = run_entry("run.py", "-m", "model=mock", swept)
    assert one_line_refusal(ran, *words).endswith("Nothing was launched.")
    assert folders(results) == [] and not (results / "store").exists()


def test_a_preset_that_sweeps_says_add_m_before_any_data_check(results):
    """Review: without -m and data_dir, `+experiment=core` stopped on WSD's missing data, not on -m."""
    ran = run_entry("run.py", "+experiment=core", "model=mock")
    one_line_refusal(ran, "add -m", "python run.py -m +experiment=core model=mock")
    assert folders(results) == []


def test_wsd_without_data_dir_says_to_set_it(results):
    ran = run_entry("run.py", "model=mock", "task=wsd")
    one_line_refusal(ran, "data_dir=")
    assert folders(results) == []


def test_wsd_files_missing_under_data_dir_say_where_to_get_them_not_a_hub_copy(results, tmp_path):
    """CoarseWSD-20 has no hub copy: its missing files point at the repository that has them."""
    ran = run_entry("run.py", "model=mock", "task=wsd", f"data_dir={tmp_path}")
    said = one_line_refusal(ran, "classes_map.txt", "danlou/bert-disambiguation")
    assert "read the hub copy" not in said
    assert folders(results) == []


def test_a_paper_grid_without_data_dir_is_refused_before_any_job_reads_the_hub(results):
    """The five tasks without data_dir: WSD has no hub copy, so the sweep stops before any job
    (the other four tasks would have been fetched first)."""
    ran = run_entry("run.py", "-m", "model=gpt54_nano", "pattern=glob(*)", "seed=0,1,2", "dry_run=true")
    assert one_line_refusal(ran, "wsd", "data_dir=").endswith("Nothing was launched.")
    assert folders(results) == []


def test_an_empty_table_leaves_no_audit_folder(results, tmp_path):
    table = tmp_path / "empty.csv"
    table.write_text("text,label\n")
    ran = run_entry("audit.py", f"audit.data={table}", "audit.labels=[a,b]")
    one_line_refusal(ran, "empty")
    assert folders(results) == []


no_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")


@no_vllm
@pytest.mark.parametrize("sweep", [False, True])
def test_a_vllm_model_without_vllm_is_refused_before_any_job(results, sweep):
    ran = run_entry("run.py", *(["-m"] if sweep else []), "model=qwen36_35b", "task=arith", "n=20")
    one_line_refusal(ran, "pip install -e '.[vllm]'", "model=qwen36_35b", "dry_run=true")
    assert folders(results) == []


@no_vllm
def test_a_vllm_models_dry_run_works_without_vllm(results):
    ran = run_entry("run.py", "model=qwen36_35b", "task=arith", "n=20", "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "would run 6 of 6 experiments" in ran.stdout + ran.stderr


def test_a_missing_api_key_leaves_no_job_folder(results, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    ran = run_entry("run.py", "model=gpt54_nano", "task=arith", "n=20")
    one_line_refusal(ran, "OPENROUTER_API_KEY")
    assert folders(results) == []


def test_a_job_that_fails_after_it_started_keeps_its_folder(results, monkeypatch):
    """The store fails mid-job: the job's manifest and log stay, to say what happened."""
    import errno
    import os

    def failing(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    ran = run_entry("run.py", "model=mock", "task=arith", "pattern=majority_first", "progress=false")
    assert ran.returncode == 2 and "Input/output error" in ran.stderr, ran.stderr[-2000:]
    assert any(name.endswith("job.json") for name in folders(results)), folders(results)


def test_a_sweep_with_a_missing_table_is_refused_before_its_first_job(results, tmp_path):
    """`-m task=arith,example_reviews` must not run job 0 (arith), then stop on the missing
    table with no summary. Every job's data is read before any is launched."""
    missing = tmp_path / "nowhere" / "reviews.csv"
    ran = run_entry("run.py", "-m", "task=arith,example_reviews", "dry_run=true", "progress=false",
                    env={"MIP_EXAMPLE_TABLE": str(missing)})
    line = one_line_refusal(ran, "example_reviews", str(missing), "does not exist", "(job task=example_reviews")
    assert line.endswith("Nothing was launched.") and "would run" not in ran.stdout + ran.stderr
    assert folders(results) == []


@pytest.mark.parametrize("sweep", [False, True])
def test_a_store_folder_that_is_a_file_leaves_nothing(results, sweep):
    """`paths.store_dir=<a file>` must leave no runs/…/.hydra or run.log behind. A
    refused job leaves nothing, whatever refuses it; a sweep is refused before any job."""
    blocker = results.parent / "a-file"
    blocker.write_text("a file where the store should be")
    args = ["-m", "pattern=majority_first,majority_last"] if sweep else ["pattern=majority_first"]
    ran = run_entry("run.py", *args, "model=mock", "task=arith", "progress=false", f"paths.store_dir={blocker}")
    line = one_line_refusal(ran, f"paths.store_dir={blocker}", "is a file")
    assert line.endswith("Nothing was launched.") == sweep
    assert folders(results) == [] and blocker.read_text() == "a file where the store should be"
