"""Instance filtering (App. C.1): instance-level checks, the stage through real and
fault-injecting servers, resume, filtered pools used by runs, and Table 4."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from mip.data import Instance
from mip.tools.filtering import FilterStore, agreement_table, check, instance_prompt, run_filter
from mip.store import Store
from mip.job import run_job

from .conftest import REPO, compose
from .fake_server import FakeServer


def tasks():
    return compose("task=all").task


def filter_config(tmp_path, *overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from mip.entry.config_store import register

    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = hydra_compose("filter", overrides=[f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}",
                                                  "progress=false", *overrides])
    return OmegaConf.to_object(cfg)


def models(cfg):
    """The filter models' configs, as filter.py composes them."""
    return [compose(f"model={name}").model for name in cfg.filter_models]


@pytest.mark.parametrize(
    "task,output,truth,label,expected",
    [
        ("math", '{"answer": "1,200"}', "1200", "even_number", ("1200", True)),
        ("math", '{"answer": "$51"}', "51", "odd_number", ("51", True)),
        ("math", '{"answer": 54.0}', "54", "even_number", ("54", True)),
        ("math", '{"answer": 52}', "54", "even_number", ("52", False)),  # same parity, wrong number
        ("math", "The answer is 54.", "54", "even_number", (None, False)),
        ("occurrence", '{"answer": 2}', "2", "more_than_once", ("2", True)),
        ("occurrence", '{"answer": 3}', "2", "more_than_once", ("3", False)),  # still more than once: wrong count
        ("occurrence", '{"answer": "2.5"}', "2", "more_than_once", ("2.5", False)),
        ("ner", '{"answer": "PER"}', None, "PER", ("PER", True)),
        ("ner", '{"answer": -1}', None, "PER", ("-1", False)),
        ("wsd", '{"answer": "programming language"}', None, "programming_language", ("programming_language", True)),
    ],
)
def test_instance_level_checks(task, output, truth, label, expected):
    instance = Instance("i", "text", label, truth)
    assert check(output, tasks()[task], instance) == expected


def test_single_instance_prompt():
    prompt = instance_prompt(tasks()["ner"], "Dirk Nowitzki ( 7 )")
    assert prompt.endswith("Instance: Dirk Nowitzki ( 7 )")
    assert 'Choose exactly one label from: "LOC", "PER".' in prompt and '{"answer": "PER"}' in prompt


def test_table4_on_constructed_outcomes():
    outcomes = {"ner": {"A": {"1": True, "2": True, "3": False, "4": False, "5": True},
                        "B": {"1": True, "2": False, "3": True, "4": False, "5": True}}}
    row = agreement_table(outcomes, ["A", "B"]).iloc[0]
    assert (row["instances"], row["correct (all)"], row["incorrect (all)"], row["only A"], row["only B"]) == (5, 2, 1, 1, 1)
    assert row["correct (all) %"] == 40.0 and row["only A %"] == 20.0


def test_stage_against_the_fault_injecting_server_then_runs_use_the_filtered_pool(tmp_path, monkeypatch):
    with FakeServer() as server:
        server.faults = {"500": 1, "error200": 1}
        monkeypatch.setenv("MIP_SERVER_URL", server.base_url)
        cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=40", "filter_models=[smollm2_135m_server]",
                            "max_tokens=64")
        report = run_filter(cfg, models(cfg))
        calls = len(server.log)
        again = run_filter(cfg, models(cfg))  # a rerun asks nothing
        assert len(server.log) == calls and again["calls"][0]["to_ask"] == 0
    assert report["calls"][0]["unstored"] == 0
    assert report["pools"]["arith"]["kept"] == {"even_number": 20, "odd_number": 20}  # the fake server is always right
    assert (tmp_path / "filter" / "table4_agreement.md").is_file()
    assert len(list(FilterStore(tmp_path / "filter"))) == 40

    run = compose("model=mock", "task=arith", "task.arith.pool_size=40", "n=10", "p=0.6", "pattern=majority_first",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(run, tmp_path / "job")
    records = list(Store(run.paths.store_dir))
    assert all(r.pool_filtered and r.pool_version == report["pools"]["arith"]["version"] for r in records)
    unfiltered = compose("model=mock", "task=arith", "task.arith.pool_size=40", "n=10", "p=0.6", "pattern=majority_first",
                         "use_filtered=false", "progress=false", f"paths.results_dir={tmp_path}",
                         f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(unfiltered, tmp_path / "job2")
    assert {r.pool_filtered for r in Store(run.paths.store_dir)} == {True, False}


def test_a_filtered_pool_smaller_than_the_set_is_refused_with_numbers(tmp_path):
    cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=20", "filter_models=[mock]",
                        "task.arith.filter.answer=label")
    report = run_filter(cfg, models(cfg))  # the mock answers a label; 'label' checks keep about half
    kept = report["pools"]["arith"]["kept"]
    run = compose("model=mock", "task=arith", "task.arith.pool_size=20", "n=20", "p=0.6", "progress=false",
                  f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    # The message gives the numbers and the way out: the unfiltered pool, or a larger filtered one.
    with pytest.raises(ValueError, match=r"filtered by mock.*needs 12 instances .* holds only \d+.*"
                                         r"; pass use_filtered=false to draw from the unfiltered pool, or filter a larger one"):
        run_job(run, tmp_path / "job")
    assert sum(kept.values()) < 20


def test_kill_mid_stage_then_rerun_stores_each_instance_once(tmp_path):
    log = tmp_path / "calls.log"
    model_file = REPO / "conf" / "model" / "mock.yaml"
    args = ["task=arith", "task.arith.pool_size=30", "filter_models=[mock]", "progress=false",
            f"paths.results_dir={tmp_path}"]
    env = {**os.environ, "MIP_MOCK_LATENCY": "0.1", "MIP_MOCK_CALL_LOG": str(log)}
    assert "MIP_MOCK_LATENCY" in model_file.read_text()
    proc = subprocess.Popen([sys.executable, str(REPO / "filter.py"), *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = tmp_path / "filter" / "mock" / "arith"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(folder.glob("*.json"))) < 5:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {p.stem for p in folder.glob("*.json")}
    first = len(log.read_text().splitlines())
    assert 5 <= len(before) < 30
    done = subprocess.run([sys.executable, str(REPO / "filter.py"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    asked_again = [line.split()[1] for line in log.read_text().splitlines()[first:]]
    assert len(list(folder.glob("*.json"))) == 30
    assert not before & set(asked_again)


def test_two_filter_runs_at_once_ask_each_instance_once(tmp_path):
    log = tmp_path / "calls.log"
    args = ["task=arith", "task.arith.pool_size=60", "filter_models=[mock]", "progress=false",
            f"paths.results_dir={tmp_path}"]
    env = {**os.environ, "MIP_MOCK_LATENCY": "0.2", "MIP_MOCK_CALL_LOG": str(log)}  # the first run takes ≈ 12 s
    first = subprocess.Popen([sys.executable, str(REPO / "filter.py"), *args], cwd=REPO, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = tmp_path / "filter" / "mock" / "arith"
    deadline = time.time() + 60
    while time.time() < deadline and not any(folder.glob("*.json")):
        time.sleep(0.05)
    second = subprocess.run([sys.executable, str(REPO / "filter.py"), *args], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=300)
    assert first.wait(timeout=300) == 0 and second.returncode == 0, second.stderr[-2000:]
    asked = [line.split()[1] for line in log.read_text().splitlines()]
    assert len(asked) == 60 and len(set(asked)) == 60  # nobody asked twice
    assert "left to another run" in second.stdout
    assert len(list(folder.glob("*.json"))) == 60


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_stage_with_real_smollm2_through_transformers_serve(tmp_path, smollm2_server):
    done = subprocess.run([sys.executable, str(REPO / "filter.py"), "task=arith", "task.arith.pool_size=4",
                           "filter_models=[smollm2_135m_server]", "max_tokens=16", "progress=false",
                           f"paths.results_dir={tmp_path}"], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MIP_SERVER_URL": smollm2_server})
    assert done.returncode == 0, done.stderr[-2000:]
    results = list(FilterStore(tmp_path / "filter"))
    assert len(results) == 4 and all(r.output is not None for r in results)
    assert "filtered pool" in done.stdout and "keeps" in done.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_stage_offline_with_the_embedded_model_in_process(tmp_path):
    cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=4", "filter_models=[smollm2_135m]", "max_tokens=12")
    report = run_filter(cfg, models(cfg))
    assert report["calls"][0]["to_ask"] == 4 and report["calls"][0]["unstored"] == 0
    assert report["pools"]["arith"]["of"] == 4


def test_table4_goes_into_the_analysis_report(tmp_path):
    from mip.analysis.report import write_report
    from mip.analysis.results import load_local

    cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=10", "filter_models=[mock]")
    run_filter(cfg, models(cfg))
    run = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "use_filtered=false",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(run, tmp_path / "job")
    report = write_report(load_local([tmp_path / "store"]), tmp_path / "report", filter_dir=tmp_path / "filter")
    assert "table4_agreement" in report.read_text()
    assert (tmp_path / "report" / "tables" / "table4_agreement.tex").is_file()


def test_a_filter_request_s_output_limit_leaves_the_prompt_its_room_in_the_context_window(tmp_path):
    """The one rule a job's requests follow (mip.job.tokens.output_room): the budget, never
    past what the context window leaves after the prompt."""
    from mip.data import build_pool
    from mip.tools.filtering import call_model
    from mip.models.mock import MockBackend

    cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=4", "max_tokens=64")
    model = compose("model=mock").model
    model.context_window = 70
    asked = []

    class Counting(MockBackend):
        def count_tokens(self, prompts):
            return [len(p) // 4 for p in prompts]

        def generate(self, requests):
            requests = list(requests)
            asked.extend(requests)
            yield from super().generate(requests)

    pools = {"arith": build_pool(cfg.task["arith"], None, tmp_path / "cache")}
    call_model(cfg, model, pools, backend=Counting(model))
    assert len(asked) == 4
    assert all(r.max_tokens == max(1, min(64, 70 - len(r.prompt) // 4)) for r in asked)
    assert any(r.max_tokens < 64 for r in asked)


def test_a_filter_run_leaves_no_flushing_thread_behind(tmp_path):
    """Its store's answers are on disk when it returns, and the store's flushing thread ends
    with it: a process that filters model after model keeps none per run."""
    from mip.data import build_pool
    from mip.tools.filtering import call_model

    from .test_packs import flushing_threads as flushing

    cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=4", "max_tokens=64")
    pools = {"arith": build_pool(cfg.task["arith"], None, tmp_path / "cache")}
    model = compose("model=mock").model
    before = flushing()
    assert call_model(cfg, model, pools)["calls"] == 4
    assert flushing() == before
    assert call_model(cfg, model, pools)["to_ask"] == 0  # every answer read back from disk
    assert len(list(FilterStore(cfg.paths.filter_dir))) == 4
