"""What a dry run says a grid costs: money for API models at their dated prices, time on one
GPU (or the CPU) for local models at their configs' throughput."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mip.job import run_job
from mip.summary import cost_lines, describe, dry_tables

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
    ({"backend": "openai_compat"}, "cost unknown: no public price shipped in conf/model/m.yaml; set "
     "model.price_input_per_mtok and model.price_output_per_mtok (USD per million tokens)"),
    # A backend added later says how it costs in the manifest (Backend.cost_basis), not by name here.
    ({"backend": "my_local_engine", "cost_basis": "time", "device": "GPU"}, "GPU time unknown"),
    ({"backend": "my_replay", "cost_basis": "none"}, "no cost (a scripted or simulated model"),
    ({"backend": "openai_compat", "price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0,
      "prompt_tokens_per_s": 1000, "output_tokens_per_s": 100}, "expected cost $3.60 input + at most $1.44 output"),
])
def test_each_kind_of_model_says_what_it_costs_or_what_to_set(fields, expected):
    (line,) = cost_lines([_job(**fields)])
    assert expected in line


@pytest.mark.parametrize("fields, expected", [
    ({"price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0}, "expected cost $2.00 input + at most $1.44 output"),
    ({"backend": "vllm", "prompt_tokens_per_s": 1000, "output_tokens_per_s": 100},
     "≈ 2.6 GPU-h if every experiment uses its whole budget (2,000,000 prompt tokens at 1,000/s"),
])
def test_prompts_that_overflow_are_named_and_left_out_of_cost_and_time(fields, expected):
    """Overflowing prompts are stored as input_overflow without a call: they cost nothing."""
    (line,) = cost_lines([_job(overflowing=2, overflow_prompt_tokens=1_600_000, **fields)])
    assert ("2 overflow the context window (input_overflow without a call: not sent, not counted); for the 8 sent "
            "(2,000,000 prompt tokens): ") in line and expected in line


def test_a_dry_run_with_overflowing_prompts_prices_only_those_it_would_send(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    text = _dry(tmp_path, "gpt_oss_120b", "model.context_window=2048", "budget=smoke")
    line = next(x for x in text.splitlines() if x.startswith("  gpt_oss_120b:"))
    assert "2 overflow the context window" in line and "for the 0 sent (0 prompt tokens): expected cost $0.00 input" in line


def test_the_sweep_summary_of_a_dry_run_has_a_table_per_model_and_task(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    text = _dry(tmp_path, "gpt_oss_120b", "model.context_window=2048", "budget=smoke")
    header, row = text.splitlines()[text.splitlines().index("  gpt_oss_120b, per task:") + 1:][:2]
    assert header.split() == ["task", "to", "run", "prompt", "tokens", "overflow", "(no", "call)", "output", "tokens",
                              "at", "most"]
    assert row.split()[:2] == ["arith", "2"] and row.split()[3:] == ["2", "0"]


def test_the_dry_run_table_sums_jobs_per_task_and_adds_a_total():
    jobs = [_job(model=m, per_task={t: {"experiments": 2, "prompt_tokens": 1000, "overflowing": o,
                                        "max_output_tokens": 40_000 * (2 - o)} for t, o in (("math", 1), ("ner", 0))})
            for m in ("a", "a", "b")] + [_job(model="c", overflowing=3)]  # c: a manifest without per_task
    lines = dry_tables(jobs)
    table = lines[lines.index("  a, per task:") + 1:lines.index("  b, per task:")]
    assert [r.split() for r in table[1:]] == [["math", "4", "2,000", "2", "80,000"], ["ner", "4", "2,000", "0", "160,000"],
                                             ["all", "8", "4,000", "2", "240,000"]]
    assert lines[-1].split() == ["(all)", "10", "3,600,000", "3", "720,000"]


def test_a_local_server_on_the_cpu_says_cpu_time_and_counts_with_the_served_tokenizer(tmp_path):
    """smollm2_135m_server runs on the CPU (its config's device) and counts prompt tokens with
    the tokenizer of the folder it serves, as smollm2_135m does in-process."""
    import os
    from pathlib import Path

    from mip.models.hf_local import converted_dir

    model = compose("model=smollm2_135m_server").model
    folder = converted_dir(compose("model=smollm2_135m").model, Path(os.environ.get("MIP_CACHE_DIR", "~/.cache/mip")).expanduser())
    assert model.runs_on == "CPU" and Path(model.tokenizer).expanduser() == folder
    text = _dry(tmp_path, "smollm2_135m_server")
    line = next(x for x in text.splitlines() if x.startswith("  smollm2_135m_server:"))
    assert "on one CPU" in line and "GPU" not in line
    assert "(tokenizer-counted)" in text


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


def test_a_tokenizer_folder_not_on_this_machine_is_an_estimate_without_importing_transformers(tmp_path):
    """A server config names the folder it serves; where that folder is missing (a fresh
    machine), counting falls back to the estimate at once, not after importing transformers."""
    code = ("import sys; from mip.models.tokenizer import load_tokenizer; "
            f"assert load_tokenizer({str(tmp_path / 'absent')!r}) is None and load_tokenizer('~/absent/mip') is None; "
            "assert load_tokenizer(None) is None and load_tokenizer('auto') is None; "
            "assert 'transformers' not in sys.modules, 'transformers was imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
