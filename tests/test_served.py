"""Another model's reply is not a verdict: a reply whose ``model`` is not the
requested one, beyond the aliases its provider documents (mip.models.served), is an
infrastructure failure that names both ids, and nothing of it is stored."""

from __future__ import annotations

import pytest

from mip.models.served import ServedModel, same_models

from .conftest import run_py
from .fake_server import FakeServer
from .test_store_trust import records, server_args

OPENAI, OPENROUTER, LOCAL = "https://api.openai.com/v1", "https://openrouter.ai/api/v1", "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("requested, base_url, served", [
    ("gpt-4o", OPENAI, "gpt-4o-2024-08-06"),  # OpenAI's dated snapshot
    ("gpt-3.5-turbo", OPENAI, "gpt-3.5-turbo-0125"),
    ("openai/gpt-4o", OPENROUTER, "openai/gpt-4o-2024-08-06"),
    ("qwen/qwen3-8b:free", OPENROUTER, "qwen/qwen3-8b"),  # a routing variant
    ("~anthropic/claude-opus-latest", OPENROUTER, "anthropic/claude-opus-4.7"),
    ("gemini-3.1-pro-preview", "https://generativelanguage.googleapis.com/v1beta/openai/", "models/gemini-3.1-pro-preview"),
    ("fake-model", LOCAL, "fake-model"),
    ("fake-model", LOCAL, None),  # a server that names no model
    ("HuggingFaceTB/SmolLM2-135M-Instruct", LOCAL, "HuggingFaceTB/SmolLM2-135M-Instruct@main"),  # transformers serve
])
def test_a_documented_alias_is_the_requested_model(requested, base_url, served):
    assert ServedModel(requested, base_url).mismatch(served) is None


@pytest.mark.parametrize("requested, base_url, served", [
    ("gpt-4o", OPENAI, "gpt-4o-mini"),
    ("gpt-4o", OPENAI, "gpt-4o-mini-2024-07-18"),
    ("openai/gpt-oss-120b", OPENROUTER, "openai/gpt-oss-20b"),
    ("~anthropic/claude-opus-latest", OPENROUTER, "openai/gpt-5"),
    ("Qwen/Qwen3-8B", LOCAL, "Qwen/Qwen3-0.6B"),
    ("Qwen/Qwen3-8B@v2", LOCAL, "Qwen/Qwen3-8B@main"),  # a revision asked for is that revision
])
def test_another_model_is_not(requested, base_url, served):
    why = ServedModel(requested, base_url).mismatch(served)
    assert why is not None and repr(served) in why and repr(requested) in why


def test_openrouters_canonical_slug_is_the_same_model():
    listing = [{"id": "anthropic/claude-sonnet-4", "canonical_slug": "anthropic/claude-4-sonnet-20250522"}]
    check = ServedModel("anthropic/claude-sonnet-4", OPENROUTER, same_models(listing, "anthropic/claude-sonnet-4"))
    assert check.mismatch("anthropic/claude-4-sonnet-20250522") is None
    assert check.mismatch("anthropic/claude-3.7-sonnet") is not None


def test_a_server_answering_as_another_model_stores_no_verdict(results):
    """The server lists the requested model but its replies name another
    one; 0 verdicts are stored, the job says so with both ids and exits 1 (rerun to finish)."""
    with FakeServer() as server:
        server.answers_as = "other-model"
        out = run_py(*server_args(server, "pattern=majority_first"))
        asked = len(server.log)
    assert asked == 2  # each experiment asked once: the same request would go the same way
    assert out.returncode == 1, out.stderr[-2000:]
    assert records(results) == []
    log = "".join(p.read_text() for p in results.rglob("run.log")) + out.stdout + out.stderr
    assert "the reply came from model 'other-model', not the requested 'fake-model'" in log


def test_another_model_answering_every_request_stops_the_job_after_a_few(results):
    """Fail fast covers another model's replies too: each is paid for and thrown away,
    so a job of 14 experiments stops after three in a row instead of asking them all."""
    with FakeServer() as server:
        server.answers_as = "other-model"
        out = run_py(*server_args(server, "pattern=random", "order_seeds=[0,1,2,3,4,5,6]"))
        asked = len(server.log)
    assert out.returncode != 0
    assert asked <= 5, asked  # three in a row stop it; one more may have gone out as a slot freed
    assert records(results) == []
    assert "another model answers for this model id" in out.stderr + out.stdout


@pytest.mark.parametrize("requested, served", [
    ("openai/gpt-oss-120b", "gpt-oss-120b"),  # a proxy that strips the provider prefix
    ("Qwen/Qwen3-8B", "qwen/qwen3-8b"),  # a lower-cased id
    ("openai/gpt-oss-120b", "gpt-oss-120b-2025-08-05"),  # a dated id on another host
    ("fake-model", "fake-model-2024-08-06"),  # (was refused on a local server: the same id, dated)
])
def test_the_same_id_up_to_prefix_case_or_date_is_the_requested_model(requested, served):
    assert ServedModel(requested, "http://127.0.0.1:8000/v1").mismatch(served) is None


def test_vllms_other_served_names_of_the_same_weights_are_the_requested_model():
    """vLLM lists each ``--served-model-name`` with the same ``root`` and answers with the first
    (https://docs.vllm.ai/en/latest/cli/serve.html, --served-model-name)."""
    listing = [{"id": "qwen3-8b", "root": "/models/Qwen3-8B"}, {"id": "my-model", "root": "/models/Qwen3-8B"},
               {"id": "other", "root": "/models/Llama"}]
    served = ServedModel("my-model", "http://127.0.0.1:8000/v1", same_models(listing, "my-model"))
    assert served.mismatch("qwen3-8b") is None
    assert served.mismatch("other") is not None and served.mismatch("llama-3-70b") is not None
