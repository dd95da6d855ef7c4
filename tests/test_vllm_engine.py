"""The vllm backend with the engine replaced at its boundary (vLLM is GPU-only)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from mip.models import BackendSetupError, Request, build_backend
from mip.store import Store
from mip.job import run_job

from .conftest import compose
from .fake_server import majority_answer


@dataclass
class _Gen:
    text: str
    token_ids: list
    finish_reason: str


@dataclass
class _Out:
    prompt_token_ids: list
    outputs: list = field(default_factory=list)


class FakeLLM:
    instances: list["FakeLLM"] = []

    def __init__(self, model, **kwargs):
        self.model, self.kwargs, self.calls = model, kwargs, []
        FakeLLM.instances.append(self)

    def get_tokenizer(self):
        return FakeTokenizer()

    def chat(self, messages, sampling_params=None, chat_template_kwargs=None, use_tqdm=True):
        self.calls.append((messages, sampling_params, chat_template_kwargs))
        outs = []
        for conversation in messages:
            prompt = conversation[-1]["content"]
            answer = majority_answer(prompt)
            outs.append(_Out([0] * 50, [_Gen(f'<think>counting parities</think>{{"answer": "{answer}"}}', [1] * 9, "stop")]))
        return outs


class FakeTokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **kwargs):
        return "<|user|>" + messages[-1]["content"]

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}


class FakeParser:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def extract_reasoning(self, text, request):
        assert request.chat_template_kwargs == {"enable_thinking": True}
        head, _, tail = text.partition("</think>")
        return head.removeprefix("<think>"), tail


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM
    vllm.SamplingParams = lambda **kw: kw
    reasoning = types.ModuleType("vllm.reasoning")
    reasoning.ReasoningParserManager = types.SimpleNamespace(get_reasoning_parser=lambda name: FakeParser)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.reasoning", reasoning)
    FakeLLM.instances = []
    return vllm


def test_a_job_hands_all_prompts_to_the_engine_in_one_call(tmp_path, fake_vllm):
    cfg = compose("model=qwen36_35b", "task=arith", "setting=smoke", "budget=smoke", "pattern=random", "progress=false",
                  f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.verdicts == {"correct": 6}
    (llm,) = FakeLLM.instances
    assert llm.model == "Qwen/Qwen3.6-35B-A3B-FP8" and llm.kwargs["enable_prefix_caching"] is True
    assert len(llm.calls) == 1 and len(llm.calls[0][0]) == 6  # one call, every prompt
    messages, params, template_kwargs = llm.calls[0]
    assert template_kwargs == {"enable_thinking": True}
    assert {p["max_tokens"] for p in params} == {320} and {p["temperature"] for p in params} == {0.0}
    for record in Store(tmp_path / "store"):
        stage = record.attempts[0].stages[0]
        assert stage.reasoning == "counting parities" and stage.output.startswith('{"answer"')


def test_vllm_is_imported_only_when_the_backend_is_used(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if not installed
    backend = build_backend(compose("model=qwen3_4b_instruct").model, "/tmp")
    with pytest.raises(BackendSetupError, match=r"pip install -e '.\[vllm\]'"):
        list(backend.generate([Request("a", "hi", 4)]))
    import mip.job  # noqa: F401 - the rest of mip never needs vLLM
