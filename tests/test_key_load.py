"""The requests a sweep puts in flight on one key: said by its dry run, bounded by key_concurrency
before any job is launched."""

from __future__ import annotations

from .conftest import run_entry

SWEEP = ("-m", "model=gpt_oss_120b", "task=arith", "setting=smoke", "budget=smoke", "pattern=glob(*)",
         "progress=false")


def test_the_dry_run_says_the_requests_in_flight_on_one_key(results):
    ran = run_entry("run.py", *SWEEP, "dry_run=true")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "gpt_oss_120b: up to 32 requests in flight on its key (1 job(s) at once × model.max_concurrency 32)" \
        in ran.stdout


def test_a_sweep_of_parallel_jobs_over_key_concurrency_is_refused_before_any_job(results):
    ran = run_entry("run.py", *SWEEP, "hydra/launcher=submitit_local", "key_concurrency=64",
                    env={"OPENROUTER_API_KEY": "sk-or-test"})
    assert ran.returncode == 2, ran.stderr[-2000:]
    line, = [x for x in ran.stderr.splitlines() if x.startswith("error:")]
    assert "runs every job at once, over key_concurrency=64" in line and "Nothing was launched" in line
    assert not list(results.rglob("job.json"))


def test_key_concurrency_below_one_jobs_concurrency_says_what_to_set(results):
    ran = run_entry("run.py", *SWEEP, "key_concurrency=16", "dry_run=true")
    assert ran.returncode == 2 and "set model.max_concurrency=16" in ran.stderr, ran.stderr[-2000:]


def test_the_checks_before_launch_say_how_far_they_are(results, monkeypatch):
    from mip.entry import sweep_checks

    monkeypatch.setattr(sweep_checks, "CHECK_LINE_EVERY_S", 0.0)  # every step, not every 5 s
    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "n=20", "p=0.6,0.7", "budget=smoke", "dry_run=true")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "checked 1 of 2 distinct job settings" in ran.stdout
