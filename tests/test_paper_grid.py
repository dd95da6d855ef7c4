"""A paper model runs the paper's experiment unless told otherwise:
`python run.py -m model=<m> 'pattern=glob(*)' seed=0,1,2` is the core grid, every explicit
override still wins, plain `python run.py` stays the small embedded job."""

from __future__ import annotations

import re

import pytest

from .conftest import RAW, REPO, compose, needs_raw, run_entry

NOT_PAPER = {"smollm2_135m", "smollm2_135m_server", "mock"}
PAPER_MODELS = sorted(f.stem for f in (REPO / "conf" / "model").glob("*.yaml")
                      if f.stem not in NOT_PAPER and not f.stem.startswith("simulated_"))
FIVE = ["math", "ner", "occurrence", "sentiment", "wsd"]


def test_the_paper_names_fifteen_models():
    assert len(PAPER_MODELS) == 15


@pytest.mark.parametrize("model", PAPER_MODELS)
def test_a_paper_model_defaults_to_the_core_setting(model):
    cfg = compose(f"model={model}")
    assert sorted(cfg.task) == FIVE
    assert (cfg.setting, cfg.n, cfg.p, cfg.order_seeds) == ("core", 2000, 0.55, [0, 1, 2])
    assert (cfg.budget.name, cfg.budget.max_tokens, cfg.prompt_variant.name) == ("20k", 20000, "standard")


@pytest.mark.parametrize("model", sorted(NOT_PAPER | {"simulated_first_k", "simulated_unbiased"}))
def test_other_models_keep_the_small_job(model):
    cfg = compose(f"model={model}")
    assert (list(cfg.task), cfg.n, cfg.budget.name) == (["arith"], 10, "smoke")


@pytest.mark.parametrize("overrides,expected", [
    (("task=math",), {"task": ["math"], "n": 2000, "budget": "20k"}),
    (("n=20",), {"task": FIVE, "n": 20, "budget": "20k"}),
    (("budget=100k",), {"task": FIVE, "n": 2000, "budget": "100k"}),
    (("setting=smoke",), {"task": FIVE, "n": 10, "budget": "20k"}),
    (("+experiment=demo",), {"task": ["arith"], "n": 10, "budget": "smoke"}),
    (("+experiment=budgets",), {"task": FIVE, "n": 2000, "budget": "20k"}),
    (("model_defaults=none",), {"task": ["arith"], "n": 10, "budget": "smoke"}),
])
def test_every_explicit_override_wins(overrides, expected):
    cfg = compose("model=gemma4_31b", *overrides)
    assert {"task": sorted(cfg.task), "n": cfg.n, "budget": cfg.budget.name} == expected


@pytest.mark.parametrize("config_name", ["audit", "attribute"])
def test_audit_and_attribute_take_a_paper_model_without_its_grid(config_name):
    cfg = compose("model=qwen36_35b", config_name=config_name)
    assert cfg.model.name == "qwen36_35b"
    if config_name == "audit":
        assert cfg.budget.name == "smoke"


def test_a_sweep_over_a_paper_model_checks_its_own_budget(results):
    """The launch check composes each swept model with its own defaults: a paper model's 20K
    fits its window, the embedded model's smoke budget fits its own."""
    ran = run_entry("run.py", "-m", "model=smollm2_135m,gpt54_nano", "task=arith", "n=20", "dry_run=true",
                    "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    said = ran.stdout + ran.stderr
    assert "2 job(s), 12 experiments" in said
    assert "output tokens at most 1,920" in said and "output tokens at most 120,000" in said  # 6 × 320, 6 × 20K


@needs_raw
@pytest.mark.slow
def test_the_core_grid_command_counts_21_jobs_and_270_experiments(results):
    ran = run_entry("run.py", "-m", "model=qwen36_35b", "pattern=glob(*)", "seed=0,1,2", "dry_run=true",
                    f"data_dir={RAW}", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert re.search(r"21 job\(s\), 270 experiments", ran.stdout), ran.stdout[-3000:]
    assert "output tokens at most 5,400,000" in ran.stdout or "5,400,000" in ran.stdout  # 270 × 20,000
