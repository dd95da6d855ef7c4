"""Faults: kills while 64 requests are in flight, concurrent jobs, a full or unwritable disk,
and W&B failing mid-run — never a lost, corrupted or double-paid result."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
import warnings

import pytest

from mip.store import Store
from mip.job import StoreError, run_job

from .stored import keys as stored_keys
from .conftest import REPO, compose, run_entry, run_py
from .fake_server import FakeServer


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_ten_kills_with_64_requests_in_flight(results):
    """Kill -9 at random moments while 64 requests are in flight against a server that answers
    in 1 s; each kill costs at most the replies docs/stopping.md says a SIGKILL loses
    (``max_concurrency``: requests sent, paid, and not stored), and after a rerun every
    experiment is stored exactly once and nothing stored was ever requested again."""
    concurrency = 64  # docs/stopping.md: a SIGKILL loses at most max_concurrency paid replies
    rng = random.Random(0)
    checks = []  # (server log length at a kill, prompt hashes stored at that kill)
    costs = []  # per kill: requests the server got during the run, less the records it stored
    with FakeServer(latency_s=1.0) as server:
        args = ["model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                f"model.max_concurrency={concurrency}", "task=arith", "n=20", "p=0.6", "pattern=random",
                f"order_seeds=[{','.join(map(str, range(1000)))}]", "budget=smoke", "progress=false"]
        folder = results / "store" / "smollm2_135m_server" / "arith"

        def count() -> int:
            return len(stored_keys(folder))

        for _ in range(10):
            sent, stored_before = len(server.log), count()
            proc = subprocess.Popen([sys.executable, str(REPO / "run.py"), *args], cwd=REPO, env=os.environ.copy(),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 120
            while time.time() < deadline and server.in_flight < concurrency and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 2))  # anywhere in the 1 s cycle of sending, answering and storing
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            time.sleep(0.3)  # requests still on their way reach the server
            costs.append((len(server.log) - sent) - (count() - stored_before))
            stored = {r.prompt_hash[:16] for r in Store(results / "store")}
            checks.append((len(server.log), stored))
        final = run_py(*args)
        assert final.returncode == 0, final.stderr[-2000:]
        log = list(server.log)
        peak = server.max_in_flight
    print(f"paid and not stored, per kill: {costs}")
    assert max(costs) <= concurrency, costs
    assert sum(c > 0 for c in costs) >= 5  # kills really landed with requests in flight
    records = list(Store(results / "store"))
    assert len(records) == 2000 and len({r.key for r in records}) == 2000  # every experiment exactly once
    for start, stored in checks:
        assert not {h for h, _ in log[start:]} & stored  # nothing stored was requested again
    assert peak == concurrency


@pytest.mark.slow
def test_two_jobs_of_a_submitit_local_sweep_share_one_store(results):
    proc = run_py("-m", "hydra/launcher=submitit_local", "model=mock", "model.mock.latency_s=0.02", "task=arith",
                  "n=20", "p=0.6", "pattern=majority_first,majority_last,majority_edges", "progress=false", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(Store(results / "store"))) == 6


def test_a_full_disk_stops_with_a_clear_error_and_keeps_what_is_written(tmp_path, monkeypatch):
    real = os.writev
    writes = {"n": 0}

    def filling(fd, buffers):
        writes["n"] += 1
        if writes["n"] > 3:
            os.write(fd, bytes(buffers[0][:100]))  # part of a record's line, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, buffers)

    monkeypatch.setattr(os, "writev", filling)
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "order_seeds=[0,1,2,3,4]",
                  "progress=false", f"paths.results_dir={tmp_path}")
    with pytest.raises(StoreError, match="No space left on device.*records already written there are complete"):
        run_job(cfg, tmp_path / "job")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(Store(cfg.paths.store_dir))) == 3
    assert not list((tmp_path / "store").rglob(".tmp-*"))


def test_an_unwritable_store_folder_is_a_clear_error(results):
    blocker = results.parent / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    proc = run_entry("run.py", "model=mock", "task=arith", "setting=smoke", f"paths.store_dir={blocker}/store")
    assert proc.returncode != 0
    assert "writable folder" in proc.stderr and "Traceback" not in proc.stderr


def test_wandb_failing_mid_run_says_so_once_and_records_complete(tmp_path, monkeypatch, capsys):
    for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    import wandb

    real_init = wandb.init

    def flaky_init(*args, **kwargs):
        run = real_init(*args, **kwargs)
        calls = {"n": 0}
        real_log = run.log

        def log(*a, **k):
            calls["n"] += 1
            if calls["n"] > 2:
                raise ConnectionError("wandb backend went away")
            return real_log(*a, **k)

        run.log = log
        return run

    monkeypatch.setattr(wandb, "init", flaky_init)
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "logger=wandb", "progress=false",
                  f"paths.results_dir={tmp_path}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.stored_now == 6
    assert capsys.readouterr().err.count("W&B logging failed") == 1


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_newcomer_clones_and_runs_make_run(tmp_path):
    """The README's main command on a fresh clone, as written (the pip cache may be reused)."""
    clone = tmp_path / "mip"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {**os.environ, "MIP_RESULTS_DIR": str(tmp_path / "results")}
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(["make", "run"], cwd=clone, env=env, capture_output=True, text=True, timeout=3500)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "sweep summary" in proc.stdout and "Records:" in proc.stdout
    assert "what the demo shows" in proc.stdout and "simulated, not an LLM" in proc.stdout
    demo = tmp_path / "results" / "demo"
    assert (demo / "report" / "report.md").is_file() and (demo / "simulated" / "report.md").is_file()
    assert list((demo / "attribution").rglob("*.png"))  # the position profile
    analysis = subprocess.run([str(clone / ".venv" / "bin" / "python"), "analyze.py"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=600)
    assert analysis.returncode == 0, analysis.stderr[-2000:]
    assert (tmp_path / "results" / "report" / "report.md").is_file()
