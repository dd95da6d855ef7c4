"""A drained stop: on SIGTERM, SIGINT or submitit's preemption signal a job
sends nothing new, stores the replies in flight, writes its manifest and exits non-zero; the
rerun pays for nothing twice. Real run.py processes against the local server, which counts the
requests and the whole replies per prompt."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mip.job.stop import stop_signals

from .conftest import REPO, run_py
from mip.models.fail_fast import LIMIT

from .fake_server import FakeServer
from .test_store_trust import records, server_args, started, wait_for

pytestmark = pytest.mark.timeout(300)


def manifest(results: Path) -> dict:
    (path,) = (results / "runs").rglob("job.json")
    return json.loads(path.read_text())


def job_args(server: FakeServer, *more: str) -> list[str]:
    # 20 experiments, 8 in flight at a time (none sent ahead: a reply holds its slot until it is stored)
    return server_args(server, "pattern=random", f"order_seeds=[{','.join(map(str, range(10)))}]",
                       "model.max_concurrency=8", *more)


def signalled(job: subprocess.Popen, sig: int, server: FakeServer) -> tuple[str, str]:
    """Send ``sig`` while the server holds the job's requests, let the replies go once the job
    says it is stopping, and wait for it to end."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(job.stderr), daemon=True)
    reader.start()
    job.send_signal(sig)
    wait_for(lambda: any("sending nothing new" in line for line in lines) or job.poll() is not None)
    server.release()  # the replies in flight arrive, well inside the grace period
    out = job.stdout.read()
    job.wait(120)
    reader.join(10)
    return out, "".join(lines)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_stores_the_replies_in_flight_and_the_rerun_pays_nothing_twice(results, sig):
    with FakeServer() as server:
        server.hold_call = 1  # each first request is held until release(): LIMIT in flight (fail fast's gate
        # sends no more before a first reply, mip.models.fail_fast)
        args = job_args(server)
        job = started(args)
        wait_for(lambda: server.held == LIMIT, proc=job)
        out, err = signalled(job, sig, server)
        sent = sum(server.calls.values())
        assert job.returncode == 128 + sig, err[-2000:]
        assert sent == LIMIT  # nothing new after the signal
        assert sum(server.answered.values()) == LIMIT == len(records(results))  # every reply delivered is stored
        assert manifest(results)["stopped_by"] == sig.name
        assert f"error: stopped by {sig.name}: {LIMIT} stored now" in err and "Traceback" not in err
        if sig == signal.SIGINT:  # Ctrl-C inside a job: the summary so far and the command that carries on
            assert "== run summary (stopped) ==" in out, out[-2000:]
            assert err.strip().splitlines()[-1].endswith("python run.py " + " ".join(map(shlex.quote, args))), err[-1000:]
        rerun = run_py(*args)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        calls = dict(server.calls)
    assert len(calls) == 20 and set(calls.values()) == {1}  # no request paid twice
    assert len(records(results)) == 20


def test_a_second_signal_ends_the_wait_at_once(results):
    with FakeServer(latency_s=120.0) as server:
        job = started(job_args(server))
        wait_for(lambda: server.in_flight == LIMIT, proc=job)  # fail fast's gate: LIMIT until a first reply
        job.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the first signal is handled at once (its handler was set before any request)
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=60)  # long before the replies (120 s) could come
    assert job.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "SIGTERM again: stopping now" in err and "Traceback" not in err
    assert records(results) == [] and manifest(results)["stopped_by"] == "SIGTERM"


def test_the_grace_period_bounds_the_wait(results):
    with FakeServer(latency_s=120.0) as server:
        job = started(job_args(server, "stop_grace_s=1"))
        wait_for(lambda: server.in_flight == LIMIT, proc=job)  # fail fast's gate: LIMIT until a first reply
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=60)
    assert job.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "grace period of 1 s is over" in err and "after the grace period" in err
    assert manifest(results)["stopped_by"] == "SIGTERM"


SUBMITIT_LIKE = """
import runpy, signal, sys
from pathlib import Path
marker = Path(sys.argv[1])
def requeue(signum, frame):  # what submitit's SignalHandler.checkpoint_and_try_requeue does: requeue, exit
    marker.write_text(str(signum))
    sys.exit(-1)
signal.signal(signal.SIGUSR1, requeue)
sys.argv = ["run.py", *sys.argv[2:]]
runpy.run_path("run.py", run_name="__main__")
"""


def test_under_submitit_the_job_drains_then_hands_the_signal_to_its_handler(results, tmp_path):
    """submitit installs its handler for the preemption signal (here USR1, as
    ``SUBMITIT_PREEMPT_SIGNAL=USR1`` asks); the job drains first, writes its manifest, then
    submitit's handler requeues and exits."""
    marker = tmp_path / "requeued"
    with FakeServer() as server:
        server.hold_call = 1
        job = subprocess.Popen([sys.executable, "-c", SUBMITIT_LIKE, str(marker), *job_args(server)], cwd=REPO,
                               env={**os.environ, "SUBMITIT_PREEMPT_SIGNAL": "USR1"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: server.held == LIMIT, proc=job)
        out, err = signalled(job, signal.SIGUSR1, server)
        assert sum(server.answered.values()) == LIMIT == len(records(results))
    assert job.returncode == 255, err[-2000:]  # sys.exit(-1), as submitit exits after requeueing
    assert marker.read_text() == str(int(signal.SIGUSR1))
    assert manifest(results)["stopped_by"] == "SIGUSR1"


def test_the_preemption_signal_is_the_one_submitit_is_told(monkeypatch):
    monkeypatch.delenv("SUBMITIT_PREEMPT_SIGNAL", raising=False)
    assert stop_signals() == [signal.SIGTERM, signal.SIGINT, signal.SIGUSR2]
    monkeypatch.setenv("SUBMITIT_PREEMPT_SIGNAL", "USR1")
    assert stop_signals()[-1] == signal.SIGUSR1


class RunMain:
    """run.py as a submitit job runs it: in the job's process, and checkpointable like Hydra's
    submitit launcher (its ``checkpoint`` resubmits the same call)."""

    def __call__(self, argv: list[str]) -> None:
        import runpy

        os.chdir(REPO)
        sys.argv = ["run.py", *argv]
        runpy.run_path(str(REPO / "run.py"), run_name="__main__")

    def checkpoint(self, argv: list[str]):
        import submitit

        return submitit.helpers.DelayedSubmission(self, argv)


def test_a_real_submitit_job_drains_then_submitit_requeues_it(results, tmp_path):
    """submitit's own LocalExecutor: its job process installs submitit's handlers; the
    preemption signal drains the job, then submitit's handler requeues it (exit 144)."""
    submitit = pytest.importorskip("submitit")
    with FakeServer() as server:
        server.hold_call = 1
        executor = submitit.LocalExecutor(folder=tmp_path / "submitit")
        executor.update_parameters(timeout_min=60)
        job = executor.submit(RunMain(), job_args(server))
        wait_for(lambda: server.held == LIMIT)
        children = Path(f"/proc/{job.job_id}/task/{job.job_id}/children").read_text().split()
        os.kill(int(children[0]), signal.SIGUSR2)
        log = lambda: job.paths.stderr.read_text() + job.paths.stdout.read_text() if job.paths.stderr.exists() else ""
        wait_for(lambda: "sending nothing new" in log())
        server.release()
        wait_for(lambda: "Requeued job" in log())
        assert sum(server.answered.values()) == LIMIT == len(records(results))
    assert manifest(results)["stopped_by"] == "SIGUSR2"
    job.cancel(check=False)
