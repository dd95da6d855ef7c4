"""Shared batches across jobs (mip.job.prefetch) and the hf backend's per-process model cache."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from mip.job import run_job
from mip.job.prefetch import first_requests, prefetch_jobs
from mip.models import Completion, Request
from mip.models.hf_local import HFBackend
from mip.models.base import BackendContext
from mip.models.mock import MockBackend

from .conftest import compose


class Counting(MockBackend):
    """The mock model with a tokenizer-like count and a record of every request it answers."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.asked: list[Request] = []

    def count_tokens(self, prompts):
        return [len(p) // 4 for p in prompts]

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        requests = list(requests)
        self.asked += requests
        yield from super().generate(requests)


def _configs(tmp_path: Path, *patterns: str):
    return [compose("model=mock", "task=arith", "setting=smoke", f"pattern={p}", "budget=smoke", "progress=false",
                    f"paths.results_dir={tmp_path}") for p in patterns]


def test_first_requests_are_exactly_what_the_job_then_sends(tmp_path):
    cfg = _configs(tmp_path, "random")[0]
    ahead = first_requests(cfg, Counting(cfg.model))
    backend = Counting(cfg.model)
    run_job(cfg, tmp_path / "job", backend=backend)
    assert len(ahead) == 6
    assert sorted((r.id, r.prompt, r.max_tokens) for r in ahead) == sorted(
        (r.id, r.prompt, r.max_tokens) for r in backend.asked)
    assert first_requests(cfg, Counting(cfg.model)) == []  # stored now: nothing left to send


def test_prefetch_jobs_hands_every_job_s_requests_to_the_backend_at_once(tmp_path):
    configs = _configs(tmp_path, "majority_first", "majority_last", "random")
    batches = []

    class Prefetching(Counting):
        def prefetch(self, requests):
            batches.append(list(requests))
            return len(batches[-1])

    assert prefetch_jobs(configs, Prefetching(configs[0].model)) == 2 + 2 + 6
    assert len(batches) == 1 and len({r.id for r in batches[0]}) == 10
    assert prefetch_jobs(configs, Counting(configs[0].model)) == 0  # a backend that cannot keep completions


def _hf(tmp_path):
    return HFBackend(compose("model=smollm2_135m").model, BackendContext(tmp_path))


def test_prefetched_completions_go_to_the_job_that_asks_under_its_own_id(tmp_path, monkeypatch):
    generated: list[list[str]] = []

    def fake_generate(self, requests):
        generated.append([r.prompt for r in requests])
        for r in requests:
            yield Completion(r.id, output=f"answer to {r.prompt}", finish_reason="stop")

    monkeypatch.setattr(HFBackend, "_generate", fake_generate)
    backend = _hf(tmp_path)
    assert backend.prefetch([Request("a", "p1", 10), Request("b", "p2", 10)]) == 2
    out = {c.id: c.output for c in backend.generate([Request("x", "p1", 10), Request("y", "p3", 10),
                                                   Request("z", "p2", 20)])}
    assert out == {"x": "answer to p1", "y": "answer to p3", "z": "answer to p2"}
    # p1 came from the batch made ahead; p3, and p2 with another output limit, were generated then.
    assert generated == [["p1", "p2"], ["p3", "p2"]]
    assert backend.prefetch([]) == 0 and len(generated) == 2  # nothing to do loads nothing


def test_a_sweep_s_jobs_load_the_weights_once(tmp_path, monkeypatch):
    import mip.models.hf_local as hf_local

    loads = []

    class Model:
        def to(self, device):
            return self

        def eval(self):
            return self

    class Auto:
        @staticmethod
        def from_pretrained(folder, **kwargs):
            loads.append(folder)
            return Model()

    class Transformers:
        AutoModelForCausalLM = Auto

    class Torch:
        float32 = "float32"

    monkeypatch.setattr(hf_local, "_import_stack", lambda: (Torch, Transformers))
    monkeypatch.setattr(hf_local, "converted_dir", lambda cfg, cache: tmp_path / cfg.name)
    monkeypatch.setattr(hf_local, "_LOADED", {})
    first, second = _hf(tmp_path), _hf(tmp_path)
    assert first.model is second.model and len(loads) == 1
    first.close()
    assert _hf(tmp_path).model is second.model and len(loads) == 1


def test_strategies_whose_first_request_needs_a_call_give_none_ahead(tmp_path):
    for override in ("strategy=decomposed", "prompt_variant=self_prompt"):
        cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "budget=smoke", override,
                      f"paths.results_dir={tmp_path}")
        assert first_requests(cfg, Counting(cfg.model)) == []
