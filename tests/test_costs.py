"""What a dry run says a grid costs: money for API models at their dated prices, time on one
GPU (or the CPU) for local models at their configs' throughput."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mip.tools.costs import cost_lines, dry_tables
from mip.job import run_job
from mip.tools.run_summary import describe

from .conftest import RAW, REPO, compose, needs_raw, run_entry


def _dry(tmp_path, model: str, *more: str) -> str:
    cfg = compose(f"model={model}", "task=arith", "n=400", "p=0.55", "pattern=majority_first", "dry_run=true",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *more)
    run_job(cfg, tmp_path / "sweep" / model)
    return describe(tmp_path / "sweep")


def line_of(text: str, model: str) -> str:
    """The cost line of a model's slice in a summary."""
    return next(x for x in text.splitlines() if x.startswith(f"  {model} ") and "per task" not in x)


def test_a_vllm_model_dry_run_without_vllm_shows_gpu_hours_and_the_rates_behind_them(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    text = _dry(tmp_path, "qwen36_35b", "budget=20k")
    line = line_of(text, "qwen36_35b")
    assert "under one GPU-minute if every experiment uses its whole budget" in line
    assert "at 43,000/s" in line and "at 6,900/s on one GPU" in line and "conf/model/qwen36_35b.yaml" in line
    assert "model.prompt_tokens_per_s" in line and "cost unknown" not in line and "runs locally" not in line


def test_an_api_model_dry_run_still_prices_its_tokens(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    line = line_of(_dry(tmp_path, "gpt_oss_120b"), "gpt_oss_120b")
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
    line = line_of(text, "gpt_oss_120b")
    assert "2 overflow the context window" in line and "for the 0 sent (0 prompt tokens): one attempt each, 0 calls: expected cost $0.00 input" in line


def test_the_sweep_summary_of_a_dry_run_has_a_table_per_slice_and_task(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    text = _dry(tmp_path, "gpt_oss_120b", "model.context_window=2048", "budget=smoke")
    title = "  gpt_oss_120b budget=smoke prompt_variant=standard strategy=single_call, per task:"
    header, rule, row = text.splitlines()[text.splitlines().index(title) + 1:][:3]
    assert cells(header) == ["task", "to run", "prompt tokens", "overflow (no call)", "calls", "output tokens at most",
                             "calls, ceiling", "output tokens, ceiling"]  # each column's name between bars, read as one
    assert set(rule.strip()) <= {"|", "-", ":"}
    assert cells(row)[:2] == ["arith", "2"] and cells(row)[3:] == ["2", "0", "0", "0", "0"]  # nothing is sent


def cells(row: str) -> list[str]:
    """The cells of one row of a dry run's table (a Markdown table: cells between bars)."""
    return [c.strip() for c in row.strip().strip("|").split("|")]


def test_the_dry_run_table_sums_jobs_per_slice_and_task_and_adds_a_total():
    counts = {"experiments": 2, "prompt_tokens": 1000, "calls": 4, "sent_prompt_tokens": 1200}
    jobs = [_job(model=m, budget=b, per_task={t: {**counts, "overflowing": o, "max_output_tokens": 40_000 * (2 - o),
                                                 "ceiling_calls": 12, "ceiling_output_tokens": 3 * 40_000 * (2 - o)}
                                             for t, o in (("math", 1), ("ner", 0))})
            for m, b in (("a", "20k"), ("a", "20k"), ("a", "100k"))] + [_job(model="c", overflowing=3)]  # c: no per_task
    lines = dry_tables(jobs)
    table = lines[lines.index("  a budget=20k, per task:") + 1:lines.index("  a budget=100k, per task:")]
    assert [cells(r) for r in table[2:]] == [["math", "4", "2,000", "2", "8", "80,000", "24", "240,000"],
                                            ["ner", "4", "2,000", "0", "8", "160,000", "24", "480,000"],
                                            ["all", "8", "4,000", "2", "16", "240,000", "48", "720,000"]]
    assert cells(lines[lines.index("  a budget=100k, per task:") + 3])[:2] == ["math", "2"]  # never pooled with 20k
    # A manifest written before dry runs counted calls: its calls and ceiling are not made up.
    assert cells(lines[-1]) == ["(all)", "10", "3,600,000", "3", "-", "720,000", "-", "-"]


def _dry_cost(tmp_path, model: str, *more: str) -> tuple[dict, str]:
    cfg = compose(f"model={model}", "task=arith", "n=400", "p=0.55", "pattern=majority_first", "dry_run=true",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *more)
    summary = run_job(cfg, tmp_path / "sweep" / model)
    return summary.per_task["arith"], describe(tmp_path / "sweep")


def test_a_dry_run_gives_the_expected_cost_and_the_ceiling_of_every_attempt_allowed(tmp_path, monkeypatch):
    """The expected cost counts one attempt per experiment; the ceiling every attempt
    allowed (max_attempts=3 for an API model), by the strategy's calls."""
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    counts, text = _dry_cost(tmp_path, "gpt_oss_120b", "budget=20k")
    assert counts["calls"] == 2 and counts["max_output_tokens"] == 2 * 20_000
    assert (counts["ceiling_calls"], counts["ceiling_output_tokens"]) == (3 * 2, 3 * 2 * 20_000)
    assert counts["ceiling_prompt_tokens"] == 3 * counts["sent_prompt_tokens"] == 3 * counts["prompt_tokens"]
    line = line_of(text, "gpt_oss_120b")
    price_in, price_out = (compose("model=gpt_oss_120b").model.price_input_per_mtok,
                           compose("model=gpt_oss_120b").model.price_output_per_mtok)
    expected_out = f"${2 * 20_000 / 1e6 * price_out:,.2f}"
    assert f"one attempt each, 2 calls: expected cost $" in line and f"at most {expected_out} output" in line
    ceiling = text.splitlines()[text.splitlines().index(line) + 1]
    assert ceiling.startswith("    ceiling, every attempt allowed (3 per experiment): 6 calls, ")
    assert ceiling.endswith(f"${3 * counts['prompt_tokens'] / 1e6 * price_in:,.2f} input + "
                            f"${6 * 20_000 / 1e6 * price_out:,.2f} output")


def test_a_deterministic_model_s_ceiling_is_its_one_attempt(tmp_path):
    counts, text = _dry_cost(tmp_path, "mock", "budget=smoke", "prompt_variant=self_prompt")
    assert counts["calls"] == counts["ceiling_calls"] == 2 * 2  # two calls an attempt, one attempt (deterministic)
    assert "ceiling, every attempt allowed (1 per experiment): 4 calls" in text


@needs_raw
def test_a_budgets_dry_run_costs_each_budget_apart_and_says_each_pool_once(results):
    """`+experiment=budgets … dry_run=true` is costed as the comparison it is: 20k and
    100k apart, per task; the pool lines its jobs share are said once. (Two patterns, one seed:
    the same sweep, four jobs; the full grid is the slow test below.)"""
    ran = run_entry("run.py", "-m", "+experiment=budgets", "model=gpt_oss_120b", f"data_dir={RAW}", "dry_run=true",
                    "pattern=majority_first,majority_last", "seed=0", env={"OPENROUTER_API_KEY": ""})
    assert ran.returncode == 0, ran.stderr[-2000:]
    _budgets_apart(ran.stdout + ran.stderr, per_budget=2, experiments=20)


def _budgets_apart(out: str, per_budget: int, experiments: int) -> None:
    """Each budget's own cost line, ceiling and table per task; each pool said once; short."""
    lines = out.splitlines()
    pools = [x for x in lines if x.startswith("pool ")]
    assert len(pools) == len(set(pools)) == 5  # one per task's pool, not one per job
    for budget, limit in (("20k", 20_000), ("100k", 100_000)):
        title = f"  gpt_oss_120b budget={budget} prompt_variant=standard strategy=single_call"
        cost = next(x for x in lines if x.startswith(title + ":"))
        assert f"{experiments} experiments" in cost and "ceiling, every attempt allowed (3 per experiment)" in \
            lines[lines.index(cost) + 1]
        table = lines[lines.index(title + ", per task:") + 3:][:6]
        assert [cells(row)[0] for row in table] == ["math", "ner", "occurrence", "sentiment", "wsd", "all"]
        ner = cells(table[1])
        calls = experiments // 5  # one call an experiment, a fifth of them ner's
        assert ner[4] == f"{calls}" and int(ner[5].replace(",", "")) == calls * limit  # ner's prompts fit either budget
    # the two budgets side by side: a title, a header, a rule and a row per budget
    side = lines.index(next(x for x in lines if x.startswith("  side by side (model × budget")))
    assert [cells(row)[:2] for row in lines[side + 3:side + 5]] == [["gpt_oss_120b", "20k"], ["gpt_oss_120b", "100k"]]
    # the summary, each pool once, and per job three lines: Hydra's launch line, the job's own, the sweep's progress
    assert len(lines) < 40 + 5 + 3 * 2 * per_budget


@pytest.mark.slow
@needs_raw
def test_the_budgets_preset_dry_run_is_short(results):
    """The whole preset (42 jobs): 436 lines before, 210 of them repeated pool lines."""
    ran = run_entry("run.py", "-m", "+experiment=budgets", "model=gpt_oss_120b", f"data_dir={RAW}", "dry_run=true",
                    env={"OPENROUTER_API_KEY": ""})
    assert ran.returncode == 0, ran.stderr[-2000:]
    _budgets_apart(ran.stdout + ran.stderr, per_budget=21, experiments=270)


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
    line = line_of(text, "smollm2_135m_server")
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


def test_the_ceiling_leaves_out_attempts_a_killed_run_paid_for(tmp_path):
    """A rerun never pays an attempt twice (mip.job.loop): its dry run's ceiling counts only
    the attempts still allowed; an experiment whose paid attempt is valid costs nothing more."""
    from mip.experiment.records import Attempt
    from mip.experiment.scoring import InvalidKind, Verdict
    from mip.store import Store

    cfg = compose("model=mock", "model.deterministic=false", "task=arith", "setting=smoke", "budget=smoke",
                  "pattern=majority_first", "dry_run=true", "progress=false", f"paths.results_dir={tmp_path}")
    first = run_job(cfg, tmp_path / "first")
    assert (first.per_task["arith"]["calls"], first.per_task["arith"]["ceiling_calls"]) == (2, 6)
    store = Store(cfg.paths.store_dir)
    invalid, valid = (Attempt(index=0, stages=[], verdict=v, invalid_kind=k)
                      for v, k in ((Verdict.INVALID, InvalidKind.PARSE), (Verdict.CORRECT, None)))
    store.put_attempt("mock", "arith", first.keys[0], invalid)
    store.put_attempt("mock", "arith", first.keys[1], valid)
    store.flush()
    again = run_job(cfg, tmp_path / "again")
    assert (again.per_task["arith"]["calls"], again.per_task["arith"]["ceiling_calls"]) == (1, 2)
