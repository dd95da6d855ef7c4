"""The analysis finds an order effect that is known to be there, and none where there is none.

A simulated model that reads only the first k instances runs the core grid (all seven
patterns, both labels, seeds 0–2, random over order seeds 0–2) through run_job → store →
analyze; the report's CSV tables must equal what the pattern definitions predict
(mip.models.simulated.expected), and the unbiased simulated model must show Δ = 0. The slow
test at the end runs the same sweep through the real run.py -m → analyze.py path and checks
that it writes the same tables.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from mip.instances import PATTERNS
from mip.models.simulated import SimulatedConfig, expected, expected_summary, respond

from mip.analysis import analyze
from mip.job import run_job
from mip.report import figures

from .conftest import REPO, compose, run_py, unencoded, vary

N, P, K = 20, 0.6, 9


def test_simulated_model_reads_only_the_first_k_and_names_them():
    labels = '"even_number", "odd_number"'
    lines = [f"Instance {i}: What is {e}?" for i, e in enumerate(["2 + 2", "3 × 3", "5 - 2", "4 × 2 + 1", "8"], 1)]
    prompt = f"Choose exactly one label from: {labels}.\n\n" + "\n".join(lines)
    text, trace = respond(prompt, SimulatedConfig(read_first=3))
    assert text == '{"answer": "odd_number"}'  # read: even, odd, odd
    assert "Instance 3" in trace and "Instance 4" not in trace
    assert respond(prompt, SimulatedConfig(None))[0] == '{"answer": "odd_number"}'  # 3 odd of 5
    assert respond(prompt, SimulatedConfig(read_first=2))[0] == '{"answer": "-1"}'  # a tie
    with pytest.raises(Exception, match="model.read_first=0 must be 1 or more"):
        SimulatedConfig(read_first=0)


def test_expected_follows_the_pattern_definitions():
    assert expected("majority_first", N, P, K)["accuracy"] == 1.0
    assert expected("majority_last", N, P, K)["accuracy"] == 0.0  # 8 minority, then 1 majority read
    assert expected("random", N, P, K)["accuracy"] == pytest.approx(2 / 3)  # order seed 1 puts 5 minority first
    assert expected_summary(N, P, None)["delta"] == 0.0


MODELS = ("simulated_first_k", "simulated_unbiased")
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The sweep's 42 jobs and their report, in this process: what `run.py -m` and analyze.py
    make (the slow test at the end checks that), without 84 Hydra compositions and two interpreters."""
    results = tmp_path_factory.mktemp("simulated")
    for model in MODELS:
        base = compose(f"model={model}", "task=arith", f"n={N}", f"p={P}", "budget=smoke", "progress=false",
                       f"paths.results_dir={results}")
        for pattern in PATTERNS:
            for seed in SEEDS:
                summary = run_job(vary(base, pattern=pattern, seed=seed), results / "jobs" / f"{model}-{pattern}-{seed}")
                assert summary.ok, summary.errors
    cfg = compose(f"results=[{results / 'store'}]", f"out_dir={results / 'report'}", f"core=[{N},{P}]",
                  config_name="analyze")
    with pytest.MonkeyPatch.context() as patch:  # these tests read tables; the slow test below encodes the figures
        patch.setattr(figures, "save", unencoded)
        return analyze(cfg).parent


def _table(report, name):
    return pd.read_csv(report / "tables" / f"{name}.csv")


def test_report_recovers_the_planted_order_effect(report):
    want = expected_summary(N, P, K)
    table = _table(report, f"table2_numbers_n{N}_p{P}").set_index("model")
    row = table.loc["simulated_first_k"]
    assert row["experiments"] == 3 * 2 * (6 + 3) and row["valid"] == row["experiments"] and row["sets"] == 6
    assert row["acc"] == pytest.approx(want["acc"]) and row["acc_sd"] == pytest.approx(0.0)
    assert row["delta"] == pytest.approx(want["delta"]) and row["delta_sd"] == pytest.approx(0.0)
    assert row["paired_seeds"] == 3 and pd.isna(row["delta_marker"])  # three seeds: no † or ‡
    patterns = _table(report, f"patterns_by_model_n{N}_p{P}")
    mine = patterns[patterns["model"] == "simulated_first_k"].set_index("pattern")["acc_mean"]
    assert mine.to_dict() == pytest.approx(want["patterns"], abs=1e-4)  # the table is rounded to 4 places
    assert mine[row["best"]] == want["best_acc"] and mine[row["worst"]] == want["worst_acc"]
    tests = _table(report, f"intervals_and_tests_n{N}_p{P}").set_index("model").loc["simulated_first_k"]
    assert tests["delta_ci_low"] > 0  # the interval excludes 0: the effect is there
    assert tests["pairs"] == 6 and tests["p_value"] == pytest.approx(2 / 2**6, abs=1e-4)  # 6 of 6 sets discordant (rounded)


def test_unbiased_simulated_model_shows_no_order_effect(report):
    table = _table(report, f"table2_numbers_n{N}_p{P}").set_index("model")
    row = table.loc["simulated_unbiased"]
    assert row["acc"] == 1.0 and row["delta"] == 0.0
    tests = _table(report, f"intervals_and_tests_n{N}_p{P}").set_index("model").loc["simulated_unbiased"]
    assert tests["delta_ci_low"] <= 0 <= tests["delta_ci_high"]


def test_coverage_and_mention_profile_match_what_was_read(report):
    bins = _table(report, f"table3_coverage_n{N}_p{P}")
    biased = bins[bins["model"] == "simulated_first_k"].set_index("bin")
    assert biased.loc["<75%", "experiments"] == 54 and biased["experiments"].sum() == 54  # 9 of 20 IDs: 45 %
    unbiased = bins[bins["model"] == "simulated_unbiased"].set_index("bin")
    assert unbiased.loc["=100%", "experiments"] == 54
    rates = pd.read_csv(report / "data" / f"mention_rates_n{N}_p{P}_smoke_unfiltered.csv")
    mine = rates[(rates["model"] == "simulated_first_k") & (rates["pattern"] == "all patterns")].sort_values("position")
    assert mine["rate"].tolist() == expected("majority_first", N, P, K)["mention_rate"]


def test_report_marks_simulated_models(report):
    text = (report / "report.md").read_text()
    assert "Simulated models" in text and "simulated_first_k" in text
    assert set(PATTERNS) <= set(_table(report, f"patterns_by_model_n{N}_p{P}")["pattern"])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_run_py_and_analyze_py_write_the_same_tables(report, tmp_path_factory):
    """The same sweep through the real entry points: `run.py -m` (Hydra's sweep, one job per
    model, pattern and seed) and analyze.py write the tables the fixture's in-process path wrote."""
    results = tmp_path_factory.mktemp("simulated_cli")
    env = {"MIP_RESULTS_DIR": str(results)}
    proc = run_py("-m", f"model={','.join(MODELS)}", "task=arith", f"n={N}", f"p={P}", "pattern=glob(*)",
                  f"seed={','.join(map(str, SEEDS))}", "budget=smoke", "progress=false", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(results.rglob("job.json"))) == len(MODELS) * len(PATTERNS) * len(SEEDS)
    out = results / "report"
    proc = subprocess.run([sys.executable, str(REPO / "analyze.py"), f"results=[{results / 'store'}]", f"out_dir={out}",
                           f"core=[{N},{P}]"], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    mine = sorted(p.relative_to(report) for p in report.rglob("*.csv"))
    assert mine and sorted(p.relative_to(out) for p in out.rglob("*.csv")) == mine
    for path in mine:
        pd.testing.assert_frame_equal(pd.read_csv(out / path), pd.read_csv(report / path), obj=str(path))
