"""Fail fast: a job stops after a few refusals no retry mends, and a sweep does not
start the same model's next job; a wait asked longer than a request may wait stops the job
instead of retrying early. Against tests/openrouter_server.py, which answers as OpenRouter's
error page documents (https://openrouter.ai/docs/api-reference/errors)."""

from __future__ import annotations

import json

import pytest

from mip.models.fail_fast import LIMIT

from .conftest import run_entry
from .openrouter_server import OpenRouterServer, Provider

KEY = {"OPENROUTER_API_KEY": "sk-or-test"}
SMALL = ("task=arith", "setting=smoke", "budget=smoke", "progress=false")
SEVEN = "pattern=glob(*)"  # seven patterns: a seven-job sweep


def _sweep(server, *extra: str, env=KEY):
    return run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, SEVEN, *extra,
                     env=env)


def test_a_seven_job_sweep_against_a_bad_key_sends_a_few_requests_in_all(results):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        ran = _sweep(server, env={"OPENROUTER_API_KEY": "sk-or-wrong"})
    assert server.requests <= 10, server.requests  # counted at the server: GET /models (no key needed) and chats
    assert len(server.bodies) == LIMIT
    assert ran.returncode == 2 and ran.stderr.count("error:") == 1, ran.stderr
    line, = [x for x in ran.stderr.splitlines() if x.startswith("error:")]
    assert "HTTP 401" in line and '"Invalid credentials"' in line and "$OPENROUTER_API_KEY was refused" in line


@pytest.mark.parametrize("status, message, fix", [
    (402, "Your account or API key has insufficient credits. Add more credits and retry the request.", "add credits"),
    (400, "temperature is not supported with this model", "rejected a parameter"),
])
def test_other_refusals_stop_the_job_with_the_providers_message_and_the_fix(results, status, message, fix):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}, refuse=(status, message)) as server:
        ran = _sweep(server)
    assert len(server.bodies) == LIMIT and ran.returncode == 2
    assert f"HTTP {status}" in ran.stderr and message in ran.stderr and fix in ran.stderr


def test_require_parameters_with_no_endpoint_stops_at_404(results):
    """OpenRouter's 404 "No endpoints found" for a parameter the pinned provider lacks."""
    with OpenRouterServer({"DeepInfra": Provider({"max_tokens"})}) as server:
        ran = _sweep(server)
    assert len(server.bodies) == LIMIT and ran.returncode == 2
    assert "HTTP 404" in ran.stderr and "No endpoints found" in ran.stderr and "preflight=only" in ran.stderr


def test_a_later_job_of_the_sweep_sends_nothing_after_a_stop(results, tmp_path):
    """Under a launcher that runs each job in a process of its own (a SLURM array), the stop is
    read from the sweep folder before the job sends anything."""
    sweep = tmp_path / "sweep"
    (sweep / ".fail_fast").mkdir(parents=True)
    (sweep / ".fail_fast" / "gpt_oss_120b.json").write_text(json.dumps(
        {"model": "gpt_oss_120b", "line": "model gpt_oss_120b: stopped after 3 refusals in a row, HTTP 401", "job": "0"}))
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        ran = _sweep(server, f"hydra.sweep.dir={sweep}")
    assert server.requests == 0 and ran.returncode == 2
    assert "an earlier job" not in ran.stderr and "HTTP 401" in ran.stderr and "this job sent nothing" in ran.stderr


@pytest.mark.parametrize("wait", [3600, 7200])
def test_a_retry_after_past_a_minute_stops_the_job_with_when_to_rerun(results, wait):
    """429 with Retry-After of an hour or two, at the default request deadline (an hour): stopped
    at the first reply with the provider's message and when to run again, not waited out (OpenRouter
    sends Retry-After on 429, https://openrouter.ai/docs/api/reference/errors-and-debugging)."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}, refuse=(429, "Rate limit exceeded"),
                          retry_after=wait) as server:
        ran = _sweep(server)
    assert len(server.bodies) <= LIMIT and ran.returncode == 2
    assert "Rate limit exceeded" in ran.stderr and f"asks to wait {wait:,} s" in ran.stderr
    assert "run the same command again after" in ran.stderr and " UTC to carry on" in ran.stderr


def test_a_retry_after_under_a_minute_is_said_in_a_line(results):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}, refuse=(429, "Rate limit exceeded"),
                          retry_after=1) as server:
        ran = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL,
                        "model.client_max_retries=1", env=KEY)
    assert len(server.bodies) > LIMIT and ran.returncode == 1  # waited, tried again, its tries spent: not stopped
    assert "asks to wait 1 s (Retry-After); waiting, then trying again" in ran.stderr


def test_a_short_retry_after_is_honoured_and_answers_go_on(results):
    """A retryable refusal keeps its retries: the job is not stopped by it."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}, refuse=(429, "Rate limit exceeded"),
                          retry_after=0) as server:
        ran = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL,
                        "model.client_max_retries=1", env=KEY)
    assert ran.returncode == 1 and "stopped" not in ran.stderr  # its tries spent, unstored: an infrastructure failure
    assert len(server.bodies) > LIMIT


MANY = "order_seeds=[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]"  # 16 experiments a job: more than LIMIT


@pytest.mark.slow
def test_a_slow_refusal_keeps_the_gate_shut_however_long_it_takes(results):
    """A 401 that comes 6 s after the request (providers' refusals are usually fast, but a
    congested gateway is not): the first job keeps at most LIMIT requests out until the first
    reply, so a 7-job sweep of 16 experiments a job sends ≤ 10 requests in all, counted at the
    server (GET /models included)."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}, delay=6.0) as server:
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, MANY,
                        "pattern=random", "seed=0,1,2,3,4,5,6", env={"OPENROUTER_API_KEY": "sk-or-slow-wrong"})
    assert server.requests <= 10, server.requests
    assert len(server.bodies) == LIMIT and ran.returncode == 2, (len(server.bodies), ran.stderr[-2000:])
    assert "HTTP 401" in ran.stderr


def test_a_model_answered_in_this_process_starts_its_next_job_without_the_gate(results):
    """Two runs of one model in one process (as the Hydra basic launcher runs a sweep's jobs):
    the second sends its requests at once, without waiting for a first reply. Counted at the
    server: the chat requests in flight before it sent its first reply (the server holds each
    until 8 are in flight, or 3 s)."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        first = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, MANY,
                          "pattern=random", env=KEY)
        assert first.returncode == 0, first.stderr[-2000:]
        server.reset_peak()
        server.gather, server.delay = 8, 3.0
        second = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, MANY,
                           "pattern=random", "seed=1", env=KEY)
    assert second.returncode == 0, second.stderr[-2000:]
    assert server.peak_before_reply >= 8, server.peak_before_reply


def test_a_new_model_config_is_gated_again_in_the_same_process(results):
    """The memory is the model config's, not the model name's: a changed body (here the
    temperature) waits for its first reply again, so a parameter the provider rejects costs
    LIMIT requests, not max_concurrency."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        first = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, MANY,
                          "pattern=random", env=KEY)
        assert first.returncode == 0, first.stderr[-2000:]
        server.reset_peak()
        server.gather, server.delay = 8, 1.0
        second = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, MANY,
                           "pattern=random", "seed=1", "model.temperature=0.5", env=KEY)
    assert second.returncode == 0, second.stderr[-2000:]
    assert server.peak_before_reply == LIMIT, server.peak_before_reply
