"""run.py as a researcher runs it: sweeps, dry runs, bad input, kill and resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from mip.store import Store

from mip.experiment.instances import PATTERNS

from .conftest import RAW, REPO, compose, needs_raw, run_entry, run_py, vary
from .stored import keys as stored_keys


def core_sweep_jobs(*overrides: str) -> list[str]:
    """The jobs mip's sweeper makes of ``+experiment=core``: its sweep parameters parsed by
    Hydra's parser and expanded (``glob(*)`` against the pattern group) by mip's splitter, as
    ``run.py -m`` expands them."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from mip.entry.compositions import split_jobs

    from .conftest import registered

    registered()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = hydra_compose("config", overrides=["+experiment=core", *overrides], return_hydra_config=True)
        parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
        parsed = parser.parse_overrides([f"{k}={v}" for k, v in cfg.hydra.sweeper.params.items()])
        return [" ".join(job) for batch in split_jobs(parsed) for job in batch]


@needs_raw
def test_core_grid_sweep_is_21_jobs_and_270_experiments(results):
    """The preset's sweep shape, quickly and in-process: Hydra's sweeper expands it, each job is
    the composed config with its pattern and seed, run dry. The counts depend on the patterns,
    seeds, labels and order seeds, not on n or the tokenizer (`run.py -m` itself over the full
    grid, n = 2,000 counted with SmolLM2's tokenizer, is the slow test below)."""
    from mip.job import run_job
    from mip.tools.run_summary import describe

    jobs = core_sweep_jobs()
    assert len(jobs) == len(set(jobs)) == 21
    assert {j.split()[0] for j in jobs} == {f"pattern={p}" for p in PATTERNS}
    base = compose("+experiment=core", "model=mock", "n=20", "dry_run=true", f"data_dir={RAW}", "progress=false")
    for job in jobs:
        pattern, seed = (part.split("=")[1] for part in job.split())
        run_job(vary(base, pattern=pattern, seed=int(seed)), results / "jobs" / job.replace(" ", ","))
    manifests = [json.loads(p.read_text()) for p in results.rglob("job.json")]
    assert sum(j["experiments"] for j in manifests) == 270 == len({k for j in manifests for k in j["keys"]})  # none twice
    assert all(j["dry_run"] and set(j["per_task"]) == {"math", "ner", "occurrence", "sentiment", "wsd"} for j in manifests)
    assert describe(results / "jobs").startswith("21 job(s), 270 experiments")
    assert not list(results.rglob("store/*"))  # nothing was called or stored


@pytest.mark.slow
@needs_raw
def test_core_grid_multirun_is_21_jobs_and_270_experiments(results):
    proc = run_py("-m", "+experiment=core", "model=smollm2_135m", "pattern=glob(*)", "seed=0,1,2", "dry_run=true",
                  "budget=smoke", f"data_dir={RAW}", "progress=false")  # 20k is refused: SmolLM2's window is 8,192
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = [json.loads(p.read_text()) for p in results.rglob("job.json")]
    assert len(jobs) == 21
    assert sum(j["experiments"] for j in jobs) == 270
    assert all(j["dry_run"] and not j["tokens_estimated"] for j in jobs)
    assert "21 job(s), 270 experiments" in proc.stdout
    assert not list(results.rglob("store/*"))  # nothing was called or stored


PAPER_TASKS = {"all", "math", "ner", "occurrence", "sentiment", "wsd"}


def _uses_a_paper_task(command: str) -> bool:
    """Whether ``python run.py …`` reads the paper's data: a task=… of the paper, or a preset
    whose task is one (conf/experiment/<name>.yaml)."""
    for arg in command.split():
        name, _, value = arg.lstrip("+").partition("=")
        if name == "task" and set(value.split(",")) & PAPER_TASKS:
            return True
        if name == "experiment":
            preset = (REPO / "conf" / "experiment" / f"{value}.yaml").read_text()
            if re.search(rf"override /task: ({'|'.join(PAPER_TASKS)})\b", preset):
                return True
    return False


def test_every_printed_command_on_the_paper_data_names_data_dir(tmp_path):
    """The commands the demo and plain run.py end with work offline as printed: one on the
    paper's tasks reads the shared data (unset, it would go to the hub, which has no WSD)."""
    from mip.entry.cli import NEXT_STEPS
    from mip.tools.embedded_demo import summary

    text = summary(tmp_path) + "\n" + NEXT_STEPS
    commands = [line[line.index("python run.py"):] for line in text.splitlines() if "python run.py" in line]
    paper = [c for c in commands if _uses_a_paper_task(c)]
    assert len(paper) >= 3 and not _uses_a_paper_task("python run.py -m +experiment=demo")
    assert [c for c in paper if "data_dir=" not in c] == []


def test_a_dry_run_is_refused_as_the_real_run_is_when_the_budget_passes_the_context_window(results):
    """model=smollm2_135m budget=20k: the real run is refused, so the dry run says the same, in
    one line with exit code 2, instead of counting output tokens that can never be asked for."""
    real = run_entry("run.py", "model=smollm2_135m", "budget=20k")
    dry = run_entry("run.py", "model=smollm2_135m", "budget=20k", "dry_run=true")
    sweep = run_entry("run.py", "-m", "model=smollm2_135m", "budget=20k", "pattern=random,majority_first", "dry_run=true")
    message = ("error: Budget 20k (20000 output tokens) is larger than the context window of smollm2_135m (8192); "
               "choose a smaller budget (e.g. budget=smoke) or another model.")
    assert (real.returncode, real.stderr.strip()) == (dry.returncode, dry.stderr.strip()) == (2, message)
    assert sweep.returncode == 2 and sweep.stderr.strip() == f"{message} Nothing was launched."
    assert "output tokens" not in dry.stdout + sweep.stdout and not list(results.rglob("job.json"))


def test_bad_p_is_refused_clearly(results):
    proc = run_entry("run.py", "model=mock", "task=arith", "p=0.45", "n=20")
    assert proc.returncode != 0 and "strictly between 0.5 and 1" in proc.stderr


def test_non_integer_majority_is_refused_clearly(results):
    proc = run_entry("run.py", "model=mock", "task=arith", "p=0.55", "n=10")
    assert proc.returncode != 0 and "n·p must be a whole number" in proc.stderr


def test_missing_data_files_are_named(results, tmp_path):
    proc = run_entry("run.py", "model=mock", "task=ner", f"data_dir={tmp_path}", "setting=smoke")
    assert proc.returncode != 0 and "ner/train-en.tsv" in proc.stderr


def test_sigkill_mid_job_then_rerun_completes_without_repeats(results, tmp_path):
    """Kill -9 a job while it works; the rerun stores the rest and asks nothing twice."""
    log = tmp_path / "calls.log"
    args = ["model=mock", "task=arith", "pattern=random", "n=20", "p=0.6", "order_seeds=[0,1,2,3,4,5,6,7,8,9]",
            "model.mock.latency_s=0.3", f"model.mock.call_log={log}", "progress=false"]
    store_dir = results / "store" / "mock" / "arith"
    proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), *args], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.time() + 60
    while time.time() < deadline and len(stored_keys(store_dir)) < 5:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first_lines = log.read_text().splitlines()
    stored_before = stored_keys(store_dir)
    assert 5 <= len(stored_before) < 20
    rerun = run_py(*args)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    rerun_ids = [line.split()[1] for line in log.read_text().splitlines()[len(first_lines):]]
    records = list(Store(results / "store"))
    assert len(records) == 20 and len({r.key for r in records}) == 20
    assert not stored_before & set(rerun_ids)  # nothing stored was requested again
    # The rerun asked for exactly what was missing: the unstored and the in-flight ones.
    assert sorted(rerun_ids) == sorted({r.key for r in records} - stored_before)


def test_two_jobs_on_one_store_at_once(results):
    args = ["model=mock", "task=arith", "n=20", "p=0.6", "model.mock.latency_s=0.01", "progress=false"]
    procs = [subprocess.Popen([sys.executable, str(REPO / "run.py"), *args, f"pattern={p}"], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
             for p in ("majority_first", "majority_last")]
    for p in procs:
        assert p.wait(120) == 0
    assert len(list(Store(results / "store"))) == 4


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_demo_with_the_real_smollm2_model(results):
    """The embedded model end to end, on a tiny setting: records with real outputs."""
    proc = run_py("model=smollm2_135m", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_edges",
                  "budget.max_tokens=24", "progress=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = list(Store(results / "store"))
    assert len(records) == 2
    for r in records:
        stage = r.attempts[0].stages[0]
        assert stage.output and stage.completion_tokens and stage.prompt_tokens > 200
        assert r.verdict in ("correct", "incorrect", "invalid")
    assert re.search(r"majority_edges\s+\d+", proc.stdout)
    assert "Records:" in proc.stdout
    assert "Loading weights" not in proc.stderr  # transformers' own bars are off when not on a terminal


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_plain_run_py_runs_a_small_job_offline_and_names_the_next_commands(results):
    proc = run_py(env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(Store(results / "store"))) == 6
    assert "python -m mip.show" in proc.stdout and "+experiment=core" in proc.stdout and "dry_run=true" in proc.stdout


def test_an_unknown_key_added_with_plus_is_named(results):
    proc = run_entry("run.py", "+nn=10", "model=mock")
    assert proc.returncode == 2 and "unknown key 'nn' (did you mean n?)" in proc.stderr
    nested = run_entry("run.py", "+model.temprature=0", "model=mock")
    assert nested.returncode == 2 and "'model.temprature'" in nested.stderr
    assert not list(results.rglob("job.json"))


@pytest.mark.parametrize("program, typo, meant", [("run.py", "nn=10", "n"), ("analyze.py", "wher.model=x", "where.model"),
                                                  ("attribute.py", "max_replay=1", "max_replays"),
                                                  ("filter.py", "filter_model=[x]", "filter_models")])
def test_a_typo_is_one_line_naming_the_key_meant_in_every_entry_point(program, typo, meant):
    proc = run_entry(program, typo)
    key = typo.split("=")[0]
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: unknown key {key!r} (did you mean {meant}?); "
                                   f"`python {program} --help` lists the options."), proc.stderr


def test_unknown_keys_are_those_the_backends_schema_lacks():
    """A model node is typed by its backend's schema: the hf model's own fields are known,
    another backend's field added with '+' is not."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from mip.entry.cli import unknown_keys
    from mip.config import Config
    from mip.entry.config_store import register

    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        assert unknown_keys(hydra_compose("config", overrides=["model=smollm2_135m"]), Config) == []
        added = hydra_compose("config", overrides=["model=smollm2_135m", "+model.base_url=http://x", "+model.nope=1"])
        assert unknown_keys(added, Config) == ["model.base_url", "model.nope"]


def test_a_backend_overridden_away_from_its_schema_is_refused(results):
    proc = run_entry("run.py", "model=mock", "model.backend=hf", "task=arith", "setting=smoke", "budget=smoke", "progress=false")
    assert proc.returncode == 2 and "reads a HFModelConfig" in proc.stderr and "/model_schema/hf@_here_" in proc.stderr
    assert not list(results.rglob("store/*"))


def test_a_sweeping_preset_without_multirun_is_refused(results):
    proc = run_entry("run.py", "+experiment=demo")
    assert proc.returncode == 2 and "add -m" in proc.stderr and "python run.py -m +experiment=demo" in proc.stderr
    assert not list(results.rglob("job.json"))


def test_a_job_logs_what_it_printed_to_run_log_and_summaries_give_percentages(results):
    proc = run_py("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (log,) = list(results.rglob("run.log"))
    text = log.read_text()
    assert "ran 2 experiments" in text and "valid-only acc %" in text and "Records:" in text
    assert "ran 2 experiments" in proc.stdout and "[INFO]" not in proc.stdout  # the terminal gets plain lines
    summary = subprocess.run([sys.executable, "-m", "mip.summary", str(log.parent)], cwd=REPO, capture_output=True,
                             text=True, env=os.environ.copy())
    assert summary.returncode == 0 and "2 run by this command, 0 found already stored" in summary.stdout
    assert re.search(r"majority_first\s+.*\s(100\.0|0\.0|50\.0)\s", summary.stdout)
    rerun = run_py("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false")
    assert "0 run by this command, 2 found already stored" in rerun.stdout


def test_summary_without_a_folder_prints_its_usage():
    proc = subprocess.run([sys.executable, "-m", "mip.summary"], cwd=REPO, capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == 2 and proc.stderr.startswith("usage: python -m mip.summary") and "Traceback" not in proc.stderr
    missing = subprocess.run([sys.executable, "-m", "mip.summary", "no/such/folder"], cwd=REPO, capture_output=True,
                             text=True, env=os.environ.copy())
    assert missing.returncode == 2 and "is not a folder" in missing.stderr


def test_a_budget_over_the_context_window_is_refused_before_the_sweep(results):
    proc = run_entry("run.py", "-m", "model=smollm2_135m", "budget=smoke,20k", "task=arith", "setting=smoke")
    assert proc.returncode == 2 and "larger than the context window" in proc.stderr
    assert not list(results.rglob("job.json"))  # nothing was launched


def test_a_sweep_with_unstored_experiments_finishes_then_exits_non_zero(results):
    from .fake_server import FakeServer

    with FakeServer() as server:
        server.faults = {"500": 1000}
        proc = run_py("-m", "model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                      "model.client_max_retries=0", "infra_retries=0", "task=arith", "setting=smoke", "budget=smoke",
                      "pattern=majority_first,majority_last", "progress=false")
    assert proc.returncode == 1
    assert len(list(results.rglob("job.json"))) == 2  # both jobs ran
    assert "left unstored" in proc.stdout + proc.stderr
    assert not list(Store(results / "store"))
