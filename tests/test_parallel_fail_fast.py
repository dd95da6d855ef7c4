"""Fail fast across processes: a sweep whose jobs run side by side (``hydra/launcher=submitit_local``,
each job a process of its own, as a SLURM array runs them) sends to a model that refuses
everything only until the first job's replies settle it; the others wait on it and then send
nothing. Counted at tests/openrouter_server.py (401 "Invalid credentials", as OpenRouter's error
page documents it: https://openrouter.ai/docs/api/reference/errors-and-debugging)."""

from __future__ import annotations

import pytest

from mip.models.fail_fast import LIMIT

from .conftest import run_py
from .openrouter_server import OpenRouterServer, Provider

SMALL = ("task=arith", "setting=smoke", "budget=smoke", "progress=false")


@pytest.mark.slow
def test_a_21_job_submitit_local_sweep_against_a_bad_key_sends_a_few_requests_in_all(results):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        ran = run_py("-m", "hydra/launcher=submitit_local", "model=gpt_oss_120b", f"model.base_url={server.base_url}",
                     *SMALL, "pattern=glob(*)", "seed=0,1,2", env={"OPENROUTER_API_KEY": "sk-or-wrong"}, timeout=900)
    assert server.requests <= 10, (server.requests, ran.stderr[-3000:])
    assert len(server.bodies) == LIMIT
    assert ran.returncode == 2, ran.stderr[-3000:]
    assert "HTTP 401" in ran.stdout + ran.stderr and "$OPENROUTER_API_KEY was refused" in ran.stdout + ran.stderr
