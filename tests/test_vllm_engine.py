"""The vllm backend with the engine replaced at its boundary (vLLM is GPU-only)."""

from __future__ import annotations

import importlib.machinery
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


class Killed(BaseException):
    """The job's process going away mid-chunk (SLURM's requeue, a time limit): nothing after it runs."""


class FakeLLM:
    instances: list["FakeLLM"] = []
    die_on_call: int | None = None  # that engine call (1-based) kills the job instead of answering

    def __init__(self, model, **kwargs):
        self.model, self.kwargs, self.calls = model, kwargs, []
        FakeLLM.instances.append(self)

    def get_tokenizer(self):
        return FakeTokenizer()

    def chat(self, messages, sampling_params=None, chat_template_kwargs=None, use_tqdm=True):
        self.calls.append((messages, sampling_params, chat_template_kwargs))
        if len(self.calls) == FakeLLM.die_on_call:
            raise Killed
        outs = []
        for conversation, params in zip(messages, sampling_params):
            prompt = conversation[-1]["content"]
            answer = majority_answer(prompt)
            # <think> and </think> are special tokens of this vocabulary, as in a tokenizer that marks
            # them special: vLLM's detokenizer drops them unless skip_special_tokens is off (its default is on).
            think, end = ("", "") if params.get("skip_special_tokens", True) else ("<think>", "</think>")
            outs.append(_Out([0] * 50, [_Gen(f'{think}counting parities{end}{{"answer": "{answer}"}}', [1] * 9, "stop")]))
        return outs


class FakeTokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **kwargs):
        return "<|user|>" + messages[-1]["content"]

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}


class FakeParser:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def extract_reasoning(self, text, request):  # as vLLM's qwen3 parser: no </think>, no reasoning
        assert request.chat_template_kwargs == {"enable_thinking": True}
        if "</think>" not in text:
            return None, text
        head, _, tail = text.partition("</think>")
        return head.removeprefix("<think>"), tail


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.__spec__ = importlib.machinery.ModuleSpec("vllm", None)  # found as installed (the job's check looks it up)
    vllm.LLM = FakeLLM
    vllm.SamplingParams = lambda **kw: kw
    reasoning = types.ModuleType("vllm.reasoning")
    reasoning.ReasoningParserManager = types.SimpleNamespace(get_reasoning_parser=lambda name: FakeParser)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.reasoning", reasoning)
    FakeLLM.instances = []
    FakeLLM.die_on_call = None
    return vllm


def test_a_job_smaller_than_a_chunk_is_one_engine_call(tmp_path, fake_vllm):
    cfg = compose("model=qwen36_35b", "task=arith", "setting=smoke", "budget=smoke", "pattern=random", "progress=false",
                  f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.verdicts == {"correct": 6}
    (llm,) = FakeLLM.instances
    assert llm.model == "Qwen/Qwen3.6-35B-A3B-FP8" and llm.kwargs["enable_prefix_caching"] is True
    assert len(llm.calls) == 1 and len(llm.calls[0][0]) == 6  # one chunk, one call, every prompt
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


def _job(tmp_path, *overrides):
    return compose("model=qwen36_35b", "task=arith", "setting=smoke", "budget=smoke", "pattern=random", "progress=false",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path}", *overrides)


def test_each_chunk_is_stored_before_the_next_and_a_rerun_asks_only_for_the_rest(tmp_path, fake_vllm):
    cfg = _job(tmp_path, "model.chunk_size=2")
    FakeLLM.die_on_call = 3  # killed while the third chunk is on the GPU
    with pytest.raises(Killed):
        run_job(cfg, tmp_path / "job1")
    (first,) = FakeLLM.instances
    assert [len(messages) for messages, _, _ in first.calls] == [2, 2, 2]
    stored = {r.key for r in Store(tmp_path / "store")}
    assert len(stored) == 4  # chunks 1 and 2 kept; only the chunk in flight is lost
    FakeLLM.die_on_call = None
    summary = run_job(cfg, tmp_path / "job2")
    second = FakeLLM.instances[-1]
    assert summary.ok and summary.already_stored == 4 and summary.stored_now == 2
    assert [len(messages) for messages, _, _ in second.calls] == [2]  # the rest only
    asked = {m[-1]["content"] for m in second.calls[0][0]}
    assert asked == {m[-1]["content"] for m in first.calls[2][0]}


def test_the_chunk_is_a_few_minutes_of_generation_and_a_bad_one_is_refused(tmp_path, fake_vllm):
    """At the paper's settings (Qwen3.6-35B-A3B's 6,900 output tokens/s, a 20K or 100K
    budget) a chunk is what the engine generates in about five minutes; without a rate, four
    engine batches."""
    from mip.models.vllm_engine import chunk_size

    model = _job(tmp_path).model
    assert chunk_size(model, 20_000) == 103 and chunk_size(model, 100_000) == 20
    assert all(n * budget / model.output_tokens_per_s <= 300 for n, budget in ((103, 20_000), (20, 100_000)))
    unrated = _job(tmp_path, "model.output_tokens_per_s=null").model
    assert chunk_size(unrated, 20_000) == 1024  # 4 x vLLM's default max_num_seqs (256)
    assert chunk_size(_job(tmp_path, "model.output_tokens_per_s=null", "+model.engine_kwargs.max_num_seqs=32").model,
                      20_000) == 128
    with pytest.raises(ValueError, match="chunk_size=0 must be at least 1"):
        run_job(_job(tmp_path, "model.chunk_size=0"), tmp_path / "job")


def test_a_special_token_think_end_reaches_the_reasoning_parser(tmp_path, fake_vllm):
    """With a reasoning parser, the text keeps special tokens, as vLLM's server does; without
    one, they are skipped as before."""
    run_job(_job(tmp_path), tmp_path / "job")
    (llm,) = FakeLLM.instances
    assert {p["skip_special_tokens"] for p in llm.calls[0][1]} == {False}
    for record in Store(tmp_path / "store"):
        stage = record.attempts[0].stages[0]
        assert stage.reasoning == "counting parities" and stage.output.startswith('{"answer"')
        assert record.verdict == "correct"
    plain = compose("model=qwen3_4b_instruct", "task=arith", "setting=smoke", "budget=smoke", "progress=false",
                    f"paths.results_dir={tmp_path / 'plain'}", f"paths.cache_dir={tmp_path}")
    run_job(plain, tmp_path / "plain-job")
    assert {p["skip_special_tokens"] for p in FakeLLM.instances[-1].calls[0][1]} == {True}


def test_the_vllm_extra_pins_what_vllm_033_installs_with_and_the_readme_says_how():
    """vLLM 0.33.0's wheel metadata (pip install --dry-run --report, 2026-12-02): torch==2.14.0,
    transformers>=5.16.1,<5.21.0. The extra says so, and the `hf` ranges admit the same."""
    import tomllib

    from packaging.requirements import Requirement

    from .conftest import REPO

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {r.name: r.specifier for r in map(Requirement, extras["vllm"])}
    assert set(pins["vllm"].filter(["0.32.0", "0.33.0", "0.34.0"])) == {"0.33.0"}
    assert set(pins["torch"].filter(["2.13.0", "2.14.0", "2.15.0"])) == {"2.14.0"}
    assert set(pins["transformers"].filter(["5.16.0", "5.16.1", "5.20.3", "5.21.0", "5.24.0"])) == {"5.16.1", "5.20.3"}
    hf = {r.name: r.specifier for r in map(Requirement, extras["hf"])}
    assert "2.14.0" in hf["torch"] and "5.20.3" in hf["transformers"]
    running = (REPO / "docs" / "running.md").read_text()
    section = running[running.index("## On a GPU node"):][:1500]
    for needed in ("driver", "torch 2.14.0", "hf download", "HF_HUB_OFFLINE=1", "pip install -e '.[vllm]'"):
        assert needed in section, needed


def test_a_rated_chunk_is_what_the_engine_gets(tmp_path, fake_vllm):
    """The smoke budget's 320 tokens at a planted 2 output tokens/s: 2 × 300 / 320 = 1 prompt a chunk."""
    summary = run_job(_job(tmp_path, "model.output_tokens_per_s=2"), tmp_path / "job")
    llm = FakeLLM.instances[-1]
    assert summary.ok and len(llm.calls) == summary.experiments and all(len(c[0]) == 1 for c in llm.calls)


def test_the_dry_run_states_the_chunk(results):
    from .conftest import run_entry

    ran = run_entry("run.py", "model=qwen36_35b", "task=arith", "setting=smoke", "budget=20k", "dry_run=true")
    assert ran.returncode == 0, ran.stderr
    assert "qwen36_35b: vllm gets the prompts 103 at a time (a chunk), each chunk stored before the next" in ran.stderr
    assert "a requeue loses at most about 5 min of generation at 6,900 output tokens/s" in ran.stderr
