"""The analysis finds an order effect that is known to be there, and none where there is none.

Three planted models (test instruments, not LLMs: mip/models/simulated.py) read the first 9,
the last 9 or all of the presented instances, take their gold labels from the job's pool and
answer the majority of what they read. What each must score follows from the pattern
definitions of App. C.3 alone (tests/planted.py, which imports nothing of mip). They run the
core grid — the paper's five tasks, all seven patterns, both labels, seeds 0–2, random over
order seeds 0–2 — at n = 20 here and at n = 2,000 in the slow tier (``+experiment=core``), and
the report's tables — accuracy per pattern, Δ, π⁺/π⁻, Table 3's bins, Fig. 5's per-ID mention
rates — must equal the closed form, read from the local store and from W&B offline runs alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mip.analysis.analyze import analyze
from mip.job import run_job
from mip.analysis.report import figures
from mip.store import Store

from . import planted
from .conftest import RAW, REPO, compose, needs_raw, run_entry, unencoded, vary
from .test_tracking import wandb_env  # noqa: F401 - fixture

N, P = 20, 0.6
MODELS = ("simulated_first_k", "simulated_last_k", "simulated_unbiased")
#: Each planted model's rule, as its conf/model/<name>.yaml sets it.
RULES = {"simulated_first_k": {"first": 9}, "simulated_last_k": {"last": 9}, "simulated_unbiased": {}}
TASKS = ("math", "ner", "occurrence", "sentiment", "wsd")
SEEDS = (0, 1, 2)


# --------------------------------------------------------------------------- the closed form itself


def _written_out(pattern: str, n_maj: int, n_min: int) -> list[bool]:
    """App. C.3 spelt out as lists (True: a majority-label instance), the reading the block
    formulas of tests/planted.py must agree with."""
    maj, mino = [True] * n_maj, [False] * n_min
    alternating = [x for _ in range(n_min) for x in (True, False)]
    surplus = [True] * (n_maj - n_min)
    half = lambda xs: -(-len(xs) // 2)  # noqa: E731 - ⌈|xs|/2⌉
    return {
        "majority_first": maj + mino, "majority_last": mino + maj,
        "majority_edges": maj[:half(maj)] + mino + maj[half(maj):],
        "majority_middle": mino[:half(mino)] + maj + mino[half(mino):],
        "soft_majority_edges": surplus[:half(surplus)] + alternating + surplus[half(surplus):],
        "soft_majority_middle": alternating[:2 * -(-n_min // 2)] + surplus + alternating[2 * -(-n_min // 2):],
    }[pattern]


@pytest.mark.parametrize("n, p", [(20, 0.6), (2000, 0.55), (10, 0.9), (21, 0.619047619047619), (100, 0.7)])
def test_the_closed_form_is_the_pattern_definitions(n, p):
    n_maj, n_min = planted.counts(n, p)
    for pattern in planted.STRUCTURED:
        labels = _written_out(pattern, n_maj, n_min)
        assert len(labels) == n and sum(labels) == n_maj
        for k in (1, 2, 9, n // 2, n - 1, n):
            assert planted.majority_read(pattern, n, p, first=k) == sum(labels[:k]), (pattern, k)
            assert planted.majority_read(pattern, n, p, last=k) == sum(labels[n - k:]), (pattern, k)


def test_the_closed_forms_examples_hold():
    import doctest

    assert doctest.testmod(planted).failed == 0


def test_the_random_pattern_is_hypergeometric():
    """The seeded shuffle the closed form replays behaves as a uniform shuffle must: over 4,000
    order seeds its accuracy lies within 4 standard errors of the hypergeometric tail."""
    for n, p, k in ((20, 0.6, 9), (2000, 0.55, 9)):
        n_maj, n_min = planted.counts(n, p)
        hits = [planted.correct(int(planted.random_order(n_maj, n_min, s)[:k].sum()), k) for s in range(4000)]
        want = planted.p_random_correct(n, p, k)
        assert abs(np.mean(hits) - want) < 4 * np.sqrt(want * (1 - want) / len(hits)), (n, np.mean(hits), want)
    assert planted.p_random_correct(20, 0.6, 20) == 1.0 and planted.p_random_correct(4, 0.75, 2) == 0.5


# --------------------------------------------------------------------------- what the report must say


def assert_recovered(report: Path, n: int, p: float, budget: str, tasks: int = len(TASKS)) -> None:
    """The report's per-model tables equal the closed form for every planted model."""
    tag = f"n{n}_p{p}"
    table2 = pd.read_csv(report / "tables" / f"table2_numbers_{tag}.csv").set_index("model")
    patterns = pd.read_csv(report / "tables" / f"patterns_by_model_{tag}.csv")
    bins = pd.read_csv(report / "tables" / f"table3_coverage_{tag}.csv")
    rates = pd.read_csv(report / "data" / f"mention_rates_{tag}_{budget}_unfiltered.csv")
    for model in MODELS:
        want = planted.expected(n, p, **RULES[model])
        row = table2.loc[model]
        experiments = tasks * 2 * len(SEEDS) * (len(planted.STRUCTURED) + 3)
        assert row["experiments"] == row["valid"] == experiments, model
        assert row["acc"] == pytest.approx(want["acc"], abs=1e-6) and row["acc_sd"] == pytest.approx(0.0)
        assert row["delta"] == pytest.approx(want["delta"]) and row["delta_sd"] == pytest.approx(0.0)
        for named, allowed in ((row["best"], want["best"]), (row["worst"], want["worst"])):  # π⁺, π⁻ (any tie rule)
            assert set(str(named).replace("/", ",").replace(" ", "").split(",")) <= allowed, (model, named, allowed)
        mine = patterns[patterns["model"] == model].set_index("pattern")["acc_mean"]
        assert mine.to_dict() == pytest.approx(want["patterns"], abs=1e-4), model  # rounded to 4 places
        mine = bins[bins["model"] == model].set_index("bin")
        assert mine.loc[want["bin"], "experiments"] == experiments == mine["experiments"].sum(), model
        assert mine.loc[want["bin"], "accuracy"] == pytest.approx(want["acc"], abs=1e-4)
        mine = rates[rates["model"] == model]
        assert set(mine["pattern"]) == {"all patterns", *planted.PATTERNS}, model
        for pattern, curve in mine.groupby("pattern"):  # Fig. 5 (all patterns) and Fig. 21 (each)
            curve = curve.sort_values("position")
            assert curve["position"].tolist() == list(range(1, n + 1))
            assert curve["rate"].tolist() == want["mention_rate"], (model, pattern)


def _run_grid(results: Path, models=MODELS, logger: str = "none") -> Path:
    """The core grid at n = 20 for ``models``, job by job in this process (what `run.py -m`
    makes, without 63 Hydra compositions); returns the jobs' folder."""
    for model in models:
        base = compose(f"model={model}", "task=all", f"data_dir={RAW}", f"n={N}", f"p={P}", "budget=smoke",
                       "progress=false", f"logger={logger}", f"paths.results_dir={results}")
        for pattern in planted.PATTERNS:
            for seed in SEEDS:
                summary = run_job(vary(base, pattern=pattern, seed=seed), results / "jobs" / f"{model}-{pattern}-{seed}")
                assert summary.ok, summary.errors
    return results / "jobs"


def _analyze(results: Path, out: Path, *extra: str) -> Path:
    # the model configs analyze.py reads what each model's traces are from (a planted model is known by its config)
    cfg = compose(f"out_dir={out}", f"core=[{N},{P}]", f"coverage.model_dir={REPO / 'conf' / 'model'}", *extra,
                  config_name="analyze")
    with pytest.MonkeyPatch.context() as patch:  # these tests read tables; the slow test encodes the figures
        patch.setattr(figures, "save", unencoded)
        return analyze(cfg).parent


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    results = tmp_path_factory.mktemp("planted")
    _run_grid(results)
    return results


@needs_raw
def test_report_recovers_each_planted_model_on_the_five_tasks(grid):
    report = _analyze(grid, grid / "report", f"results=[{grid / 'store'}]")
    assert_recovered(report, N, P, "smoke")
    text = (report / "report.md").read_text()
    assert "simulated_last_k" in text and "not an LLM" in text


@needs_raw
def test_every_record_answers_the_majority_of_what_it_read(grid):
    """Per record: valid, the answer in the App. B format, the majority of the gold labels of
    the instances it read, and a trace naming exactly their IDs."""
    from mip.analysis.coverage import mentioned_ids

    records = list(Store(grid / "store"))
    assert len(records) == len(MODELS) * len(TASKS) * 2 * len(SEEDS) * 9
    for record in records:
        rule = RULES[record.experiment.model]
        labels, n = list(record.instance_labels), record.experiment.n
        k = planted.read_count(n, rule.get("first"), rule.get("last"))
        read = list(range(k)) if "last" not in rule else list(range(n - k, n))
        stage = record.attempts[-1].stages[-1]
        maj = sum(labels[i] == record.experiment.majority_label for i in read)
        assert json.loads(stage.output)["answer"] == record.answer
        assert record.verdict.value == ("correct" if maj > k - maj else "incorrect"), record.key
        assert mentioned_ids(stage.reasoning, n) == {i + 1 for i in read}
        assert "test instrument" in stage.reasoning


def test_the_local_store_and_wandb_offline_runs_give_the_same_recovered_report(tmp_path, wandb_env):  # noqa: F811
    """The W&B-sourced report recovers the planted models as the store's does (arith, so that
    the five tasks' 63 W&B runs stay in the slow tier)."""
    results = run_one_seed(tmp_path / "results", logger="wandb")
    local = _analyze(results, tmp_path / "local", f"results=[{results / 'store'}]")
    remote = _analyze(results, tmp_path / "wandb", "source=wandb", f"results=[{results / 'jobs'}]")
    for report in (local, remote):
        assert_recovered_one_seed(report)
    for name in ("tables/table2_numbers", "tables/patterns_by_model", "tables/table3_coverage"):
        path = f"{name}_n{N}_p{P}.csv"
        pd.testing.assert_frame_equal(pd.read_csv(remote / path), pd.read_csv(local / path), obj=path)


def run_one_seed(results: Path, logger: str = "none") -> Path:
    """The three planted models on arith, every pattern, seed 0 (18 experiments each): the
    fastest planted sweep, needing no shared data; returns ``results`` (jobs under ``jobs/``)."""
    for model in MODELS:
        base = compose(f"model={model}", "task=arith", f"n={N}", f"p={P}", "budget=smoke", "progress=false",
                       f"logger={logger}", *(["logger.mode=offline"] if logger == "wandb" else []),
                       f"paths.results_dir={results}")
        for pattern in planted.PATTERNS:
            summary = run_job(vary(base, pattern=pattern, seed=0), results / "jobs" / f"{model}-{pattern}")
            assert summary.ok, summary.errors
    return results


def assert_recovered_one_seed(report: Path) -> None:
    """One task, one seed: accuracy per pattern, Δ and bins as the closed form says."""
    table2 = pd.read_csv(report / "tables" / f"table2_numbers_n{N}_p{P}.csv").set_index("model")
    patterns = pd.read_csv(report / "tables" / f"patterns_by_model_n{N}_p{P}.csv")
    for model in MODELS:
        want = planted.expected(N, P, **RULES[model])
        assert table2.loc[model, "valid"] == 2 * 9 and table2.loc[model, "delta"] == pytest.approx(want["delta"])
        mine = patterns[patterns["model"] == model].set_index("pattern")["acc_mean"]
        assert mine.to_dict() == pytest.approx(want["patterns"], abs=1e-4), model
    rates = pd.read_csv(report / "data" / f"mention_rates_n{N}_p{P}_smoke_unfiltered.csv")
    last = rates[(rates["model"] == "simulated_last_k") & (rates["pattern"] == "all patterns")].sort_values("position")
    assert last["rate"].tolist() == planted.expected(N, P, last=9)["mention_rate"]


# --------------------------------------------------------------------------- every task, and refusal


def test_planted_models_answer_a_synthetic_and_a_users_task(tmp_path, monkeypatch):
    """arith (generated) and a user's table whose texts hold line breaks and whose labels hold
    digits: every record valid, the verdicts as the closed form says."""
    table = tmp_path / "reviews.csv"
    texts = [f"review {i}\nInstance 0: a second line" if i % 7 == 0 else f"review number {i}" for i in range(60)]
    pd.DataFrame({"text": texts, "label": [i % 2 for i in range(60)]}).to_csv(table, index=False)
    monkeypatch.setenv("MIP_EXAMPLE_TABLE", str(table))
    for task in ("arith", "example_reviews"):
        for model in ("simulated_first_k", "simulated_last_k"):
            base = compose(f"model={model}", f"task={task}", f"n={N}", f"p={P}", "budget=smoke", "progress=false",
                           f"paths.results_dir={tmp_path / 'results'}")
            if task == "example_reviews":  # labels with digits
                base.task[task].labels = ["stars_1", "stars_5"]
                base.task[task].source.label_map = {"0": "stars_1", "1": "stars_5"}
            for pattern in planted.STRUCTURED:
                summary = run_job(vary(base, pattern=pattern), tmp_path / "jobs" / f"{task}-{model}-{pattern}")
                assert summary.ok and sum(summary.verdicts.values()) == summary.verdicts.get("correct", 0) + \
                    summary.verdicts.get("incorrect", 0) == 2, (task, summary.verdicts)
                right = planted.pattern_accuracy(pattern, N, P, **{"first": None, "last": None, **RULES[model]})
                assert summary.verdicts.get("correct", 0) == 2 * right, (task, model, pattern, summary.verdicts)
    stored = list(Store(tmp_path / "results" / "store"))
    users = [r for r in stored if r.experiment.task == "example_reviews"]
    assert users and all(r.answer in ("stars_1", "stars_5") for r in users)
    traces = [r.attempts[0].stages[0].reasoning for r in users]
    assert all("label " in t and "stars" not in t for t in traces)  # labels named without their digits


@pytest.mark.parametrize("extra", [("prompt_variant=hint",), ("prompt_variant=self_prompt",), ("strategy=count_report",)])
def test_planted_models_answer_every_prompt_variant_and_count_report(tmp_path, extra):
    base = compose("model=simulated_last_k", "task=arith", f"n={N}", f"p={P}", "budget=smoke", "progress=false", *extra,
                   f"paths.results_dir={tmp_path}")
    for pattern in ("majority_first", "majority_last"):
        summary = run_job(vary(base, pattern=pattern), tmp_path / pattern)
        right = planted.pattern_accuracy(pattern, N, P, first=None, last=9)
        assert summary.ok and summary.verdicts == {"correct" if right else "incorrect": 2}, (extra, summary.verdicts)
    if "strategy=count_report" in extra:  # the counts of what it read: 9 instances
        assert {sum(r.reported_counts.values()) for r in Store(tmp_path / "store")} == {9}


def test_a_task_a_planted_model_cannot_answer_is_refused_before_any_call(results):
    for extra in ((), ("dry_run=true",)):
        proc = run_entry("run.py", "model=simulated_first_k", "task=arith", "strategy=decomposed", "n=20", "p=0.6",
                         "budget=smoke", *extra)
        assert proc.returncode == 2, proc.stderr[-2000:]
        (line,) = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
        assert "planted model" in line and "strategy=single_call" in line and "Traceback" not in proc.stderr
    assert not (results / "store").exists() or not list(Store(results / "store"))


def test_a_planted_model_outside_a_job_is_refused(results):
    """filter.py hands a backend no pool: a planted model says so before its first call."""
    from mip.models.simulated import SimulatedConfig

    proc = run_entry("filter.py", "task=arith", "task.arith.pool_size=20", "filter_models=[simulated_last_k]")
    assert proc.returncode == 2 and "answers run.py jobs only" in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
    with pytest.raises(Exception, match="not both"):
        SimulatedConfig(read_first=3, read_last=3)
    with pytest.raises(Exception, match="model.read_last=0 must be 1 or more"):
        SimulatedConfig(read_last=0)


# --------------------------------------------------------------------------- the paper's scale


@needs_raw
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_core_grid_at_2000_recovers_every_planted_model(tmp_path, wandb_env):  # noqa: F811
    """`run.py -m +experiment=core` with the three planted models (63 jobs, 810 experiments of
    2,000 instances, W&B offline), then analyze.py on the store and on the W&B offline runs:
    both reports say what the closed form says, Table 3's bins and Fig. 5 over 2,000 IDs included."""
    env = {**os.environ, "MIP_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(REPO / "run.py"), "-m", "+experiment=core", f"model={','.join(MODELS)}",
                           f"data_dir={RAW}", "progress=false", "logger=wandb", "logger.mode=offline"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(Store(tmp_path / "store"))) == 3 * 270
    for out, source in ((tmp_path / "local", [f"results=[{tmp_path / 'store'}]"]),
                        (tmp_path / "wandb", ["source=wandb", f"results=[{tmp_path / 'sweeps'}]"])):
        proc = subprocess.run([sys.executable, str(REPO / "analyze.py"), *source, f"out_dir={out}"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert_recovered(out, 2000, 0.55, "20k")
