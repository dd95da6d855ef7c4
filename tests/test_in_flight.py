"""Long waits talk: a job whose requests are in flight says so at least every
``progress_interval_s`` (30 s by default), before any experiment lands; a sweep says it is
checking its jobs as its command starts (run.py's first line, before its imports), and its ETA
leaves out the first job's start."""

from __future__ import annotations

import threading

from mip.tracking.in_flight import Heartbeat, InFlight, due
from mip.tracking.progress import Lines, sweep_eta

from .conftest import compose, run_entry
from .fake_server import FakeServer

HEARTBEAT_SAY = Heartbeat.say


def test_a_job_waiting_on_a_slow_server_says_what_it_waits_on(results, monkeypatch):
    """Every first call of a prompt is held by the server (as a server answering after 40 s
    would) until the job's heartbeat has said a line, so no experiment lands before it: the
    job can only finish (and the test pass) where the line was said while every request was
    still waiting. Before, nothing was said until an experiment landed."""
    said: list[tuple[int, float]] = []
    with FakeServer() as server:
        server.hold_call = 1

        def say(self, count: int, oldest: float, now: float) -> None:
            HEARTBEAT_SAY(self, count, oldest, now)
            said.append((count, self.bar.n))
            server.release()

        monkeypatch.setattr(Heartbeat, "say", say)
        safety = threading.Timer(120, server.release)  # without a heartbeat the test fails, and does not hang
        safety.start()
        try:
            ran = run_entry("run.py", "model=smollm2_135m_server", f"model.base_url={server.base_url}",
                            "model.model_id=fake-model", "model.tokenizer=null", "task=arith", "n=10", "p=0.6",
                            "pattern=majority_first", "budget=smoke", "progress_interval_s=0.2")
        finally:
            safety.cancel()
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert said and said[0] == (2, 0), "no line while the requests were in flight"
    assert "smollm2_135m_server/majority_first: 2 request(s) in flight, the oldest for 00:0" in ran.stdout
    assert "0/2 exp done" in ran.stdout  # the console shows it (and run.log)


def test_the_default_says_a_line_within_30_s_of_silence():
    """The default path without waiting 30 s: the setting's default, and when a line falls due."""
    assert compose().progress_interval_s == 30.0
    assert not due(last=100.0, now=129.9, interval=30.0) and due(last=100.0, now=130.0, interval=30.0)
    waiting = InFlight()
    waiting.sent("a", now=100.0)
    waiting.sent("b", now=105.0)
    assert waiting.snapshot(now=140.0) == (2, 40.0)  # a server answering after 40 s: the oldest waited 40 s
    waiting.forget(["a", "b"])
    assert waiting.snapshot() == (0, None)


def test_a_progress_line_counts_as_said():
    """The heartbeat speaks after the interval's silence, the bar's lines included."""
    bar = Lines(10, "m/p", "exp", interval=30.0)
    beat = Heartbeat(bar, InFlight(), 30.0, "m/p")
    bar.last = beat.last + 25.0
    assert beat._said() == bar.last


def test_a_sweep_says_it_is_checking_its_jobs_and_its_eta_follows_the_jobs_after_the_first(results):
    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "pattern=majority_first,majority_last", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = ran.stdout + ran.stderr
    assert ran.stdout.startswith("Checking the sweep's settings and composing its jobs before launching them")
    assert "sweep: 1/2 jobs (" in out and "ETA after the next job" in out
    assert sweep_eta(2, 21, 0.0, 60.0, 63.0).endswith("ETA 00:57")  # 3 s a job after the first's 60 s
