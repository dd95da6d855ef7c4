"""Accounting that adds up: a request dropped in flight when a stop's wait
ends is counted as a call and its experiment as left unstored (before: "0 stored now, 0 left
unstored" and ``"calls": 0``); a sweep says one time, its own."""

from __future__ import annotations

import signal

import pytest

from mip.models.fail_fast import LIMIT

from .conftest import run_entry
from .fake_server import FakeServer
from .test_stop import job_args, manifest
from .test_store_trust import started, wait_for


@pytest.mark.timeout(300)
def test_requests_dropped_in_flight_are_counted_as_they_happened(results):
    with FakeServer(latency_s=120.0) as server:
        # 20 experiments, 8 at a time; until its first reply (here 120 s away) fail fast's gate
        # lets LIMIT of them out (mip.models.fail_fast), the rest wait unsent
        job = started(job_args(server, "stop_grace_s=1"))
        wait_for(lambda: server.in_flight == LIMIT, proc=job)
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=60)
        sent = sum(server.calls.values())
    assert job.returncode == 128 + signal.SIGTERM, err[-2000:]
    done = manifest(results)
    # the LIMIT requests the server got are counted as calls a provider may charge (mip.job.loop);
    # those handed to the backend behind them, held at the gate, never went out and are not
    assert sent == LIMIT == done["dropped"]
    assert done["calls"] == done["dropped"] and done["stored_now"] == 0 and done["unstored"] == 20
    assert f"0 stored now, 20 left unstored ({done['dropped']} request(s) in flight dropped)" in err
    summary = run_entry("-m", "mip.summary", str((results / "runs").glob("*/*").__next__()))
    assert "20 experiment(s) left unstored after a stop (20)" in summary.stdout, summary.stdout


def test_a_sweep_says_one_time(results):
    """Its one slice's time is the sweep's, measured from launch to end; before, the slice said
    its jobs' wall times added up beside "The sweep took …", two times for one sweep."""
    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "pattern=majority_first,majority_last", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    summary = ran.stdout.split("== sweep summary ==")[1]
    assert "wall times added up" not in summary and "The sweep took" not in summary
    assert "(measured: the sweep's wall time, from launch to end)" in summary, summary
