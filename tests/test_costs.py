"""What a dry run says a grid costs: money for API models at their dated prices, time on one
GPU (or the CPU) for local models at their configs' throughput."""

from __future__ import annotations

import sys

import pytest

from mip.job import run_job
from mip.summary import cost_lines, describe

from .conftest import REPO, compose


def _dry(tmp_path, model: str, *more: str) -> str:
    cfg = compose(f"model={model}", "task=arith", "n=400", "p=0.55", "pattern=majority_first", "dry_run=true",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *more)
    run_job(cfg, tmp_path / "sweep" / model)
    return describe(tmp_path / "sweep")


def test_a_vllm_model_dry_run_without_vllm_shows_gpu_hours_and_the_rates_behind_them(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    text = _dry(tmp_path, "qwen36_35b", "budget=20k")
    line = next(x for x in text.splitlines() if x.startswith("  qwen36_35b:"))
    assert "under one GPU-minute if every experiment uses its whole budget" in line
    assert "at 43,000/s" in line and "at 6,900/s on one GPU" in line and "conf/model/qwen36_35b.yaml" in line
    assert "model.prompt_tokens_per_s" in line and "cost unknown" not in line and "runs locally" not in line


def test_an_api_model_dry_run_still_prices_its_tokens(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    line = next(x for x in _dry(tmp_path, "gpt_oss_120b").splitlines() if x.startswith("  gpt_oss_120b:"))
    assert "expected cost $" in line and "GPU" not in line


def _job(**fields):
    return {"model": "m", "experiments": 10, "already_stored": 0, "prompt_tokens": 3_600_000,
            "max_output_tokens": 720_000, "dry_run": True, **fields}


@pytest.mark.parametrize("fields, expected", [
    ({"backend": "vllm", "device": "GPU", "prompt_tokens_per_s": 1000, "output_tokens_per_s": 100},
     "≈ 3.0 GPU-h if every experiment uses its whole budget (3,600,000 prompt tokens at 1,000/s + 720,000 output "
     "tokens at 100/s on one GPU"),
    ({"backend": "hf", "device": "CPU", "prompt_tokens_per_s": 1e4, "output_tokens_per_s": 1e4}, "≈ 7 CPU-min"),
    ({"backend": "vllm", "device": "GPU"}, "GPU time unknown (set model.prompt_tokens_per_s"),
    ({"backend": "simulated"}, "no cost (a scripted or simulated model, not an LLM)"),
    ({"backend": "openai_compat"}, "cost unknown (set model.price_input_per_mtok"),
    ({"backend": "openai_compat", "price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0,
      "prompt_tokens_per_s": 1000, "output_tokens_per_s": 100}, "expected cost $3.60 input + at most $1.44 output"),
])
def test_each_kind_of_model_says_what_it_costs_or_what_to_set(fields, expected):
    (line,) = cost_lines([_job(**fields)])
    assert expected in line


LOCAL = sorted(f.stem for f in (REPO / "conf" / "model").glob("*.yaml")
               if "backend: vllm" in f.read_text() or "backend: hf" in f.read_text() or "127.0.0.1" in f.read_text())


@pytest.mark.parametrize("model", LOCAL)
def test_every_local_model_ships_a_throughput_and_says_where_it_comes_from(model):
    text = (REPO / "conf" / "model" / f"{model}.yaml").read_text()
    cfg = compose(f"model={model}").model
    assert cfg.prompt_tokens_per_s and cfg.output_tokens_per_s
    note = text.split("Dry-run", 1)[1]
    assert "2026-12-02" in note or "assumed" in note.lower()
    assert "https://" in note or "Measured" in note or "smollm2_135m.yaml" in note
