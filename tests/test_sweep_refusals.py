"""A refusal no retry mends stops its own model, not the sweep: the other models' jobs run,
and the sweep's summary names each stopped model with the status, the provider's message and
the fix. A 200 reply whose body is an error object is read as that error. Against
tests/openrouter_server.py, which answers as OpenRouter's error page documents
(https://openrouter.ai/docs/api/reference/errors-and-debugging); every request is counted at the server."""

from __future__ import annotations

from mip.models.fail_fast import LIMIT

from .conftest import local_models, run_entry
from .openrouter_server import OpenRouterServer, Provider

KEY = {"OPENROUTER_API_KEY": "sk-or-test"}
SMALL = ("task=arith", "setting=smoke", "budget=smoke", "progress=false")
DEEPINFRA = {"DeepInfra": Provider({"temperature", "max_tokens"})}
FORBIDDEN = "Forbidden (insufficient permissions, guardrail block, or moderation flag)"


def test_one_models_403_stops_only_that_model_and_the_other_runs_every_job(results, tmp_path):
    with OpenRouterServer(DEEPINFRA, also_list=("meta-llama/llama-4-scout",),
                          refuse_models={"openai/gpt-oss-120b": (403, FORBIDDEN)}) as server:
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b_local,llama4_scout_local",
                        local_models(tmp_path, server.base_url, "gpt_oss_120b", "llama4_scout"),
                        *SMALL, "pattern=random,majority_first,majority_last", env=KEY)
    assert server.chats_by_model["openai/gpt-oss-120b"] == LIMIT, server.chats_by_model
    scout = server.chats_by_model.get("meta-llama/llama-4-scout", 0)
    assert scout >= 3, server.chats_by_model  # every job of the healthy model ran (one experiment each)
    assert ran.returncode == 2, ran.stderr[-2000:]
    summary = ran.stdout[ran.stdout.index("== sweep summary =="):]
    assert "llama4_scout" in summary
    stopped = summary[summary.index("Stopped model"):]
    assert "gpt_oss_120b" in stopped and "HTTP 403" in stopped and FORBIDDEN in stopped
    assert "moderation" in stopped.split(FORBIDDEN)[1]  # the fix follows the provider's message
    assert "llama4_scout" not in stopped


def test_a_200_reply_with_an_error_body_is_read_as_that_error(results):
    """OpenRouter's 402 inside a 200 body: a refusal like an HTTP 402, not a reply to retry:
    a seven-job sweep sends a few requests in all, not 90."""
    with OpenRouterServer(DEEPINFRA, error_body=(402, "Insufficient credits")) as server:
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL,
                        "pattern=glob(*)", env=KEY)
    assert server.requests <= 10, server.requests
    assert len(server.bodies) == LIMIT, len(server.bodies)
    assert ran.returncode == 2
    assert "HTTP 402" in ran.stderr and "Insufficient credits" in ran.stderr and "add credits" in ran.stderr


def test_a_swept_value_without_m_is_mips_one_line(results):
    ran = run_entry("run.py", "model=gpt_oss_120b", "pattern=random,majority_first", "dry_run=true")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert "add -m to run one job per value" in ran.stderr and "python run.py -m model=gpt_oss_120b" in ran.stderr


def test_an_option_in_the_wrong_case_is_suggested(results):
    ran = run_entry("run.py", "task=NER", "dry_run=true")
    assert ran.returncode == 2 and "(did you mean ner?)" in ran.stderr, ran.stderr


def test_extra_body_cannot_overwrite_what_mip_sets(results):
    ran = run_entry("run.py", "model=gpt_oss_120b", "+model.extra_body.temperature=0.7", "dry_run=true")
    assert ran.returncode == 2 and "model.extra_body sets temperature, which mip sets itself" in ran.stderr, ran.stderr
