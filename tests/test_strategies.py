"""Order-robust aggregation strategies (beyond the paper): count_report and decomposed."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from mip.store import Store
from mip.job import run_job
from mip.experiment.scoring import majority_of, parse_counts, parse_labels

from .conftest import compose
from .fake_server import FakeServer


def config(tmp_path, server, *overrides):
    return compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                   "task=arith", "n=20", "p=0.6", "budget=smoke", "progress=false", "model.request_timeout_s=2",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *overrides)


def test_count_and_tie_rule():
    assert majority_of(["a", "b", "a", None], ["a", "b"]) == "a"
    assert majority_of(["a", "b", None], ["a", "b"]) == "-1"
    assert majority_of([None, None], ["a", "b"]) == "-1"


def test_parse_labels_keeps_asked_ids_with_one_valid_label():
    out = '[{"id": 1, "label": "LOC"}, {"id": 2, "label": "PER"}, {"id": 2, "label": "LOC"}, {"id": 3, "label": "ORG"}, {"id": 7, "label": "PER"}]'
    assert parse_labels(out, ["LOC", "PER"], [1, 2, 3]) == {1: "LOC"}
    assert parse_labels("no list here", ["LOC", "PER"], [1]) == {}


def test_parse_counts():
    assert parse_counts('x {"counts": {"LOC": 3, "per": 5}, "answer": "PER"}', ["LOC", "PER"]) == {"LOC": 3, "PER": 5}
    assert parse_counts('{"counts": {"LOC": 3}, "answer": "PER"}', ["LOC", "PER"]) is None
    assert parse_counts('{"answer": "PER"}', ["LOC", "PER"]) is None


def test_count_report_stores_the_models_counts(tmp_path):
    with FakeServer() as server:
        cfg = config(tmp_path, server, "strategy=count_report", "pattern=majority_first")
        summary = run_job(cfg, tmp_path / "job")
        assert 'fields "counts"' in server.bodies[0]["messages"][0]["content"]
    assert summary.ok and summary.verdicts == {"correct": 2}
    for record in Store(cfg.paths.store_dir):
        assert record.experiment.strategy == "count_report"
        truth = {label: record.instance_labels.count(label) for label in cfg.task["arith"].labels}
        assert record.reported_counts == truth


@pytest.mark.parametrize("fault", [None, "missing", "duplicate", "extra"])
@pytest.mark.parametrize("batch_size", [1, 7])
def test_decomposed_counts_in_code_and_asks_again_for_what_is_missing(tmp_path, fault, batch_size):
    with FakeServer() as server:
        server.batch_fault = fault
        cfg = config(tmp_path, server, "strategy=decomposed", f"strategy.batch_size={batch_size}", "pattern=majority_middle")
        summary = run_job(cfg, tmp_path / "job")
        asked = len(server.bodies)
    assert summary.ok and summary.verdicts == {"correct": 2}
    first_round = 2 * -(-20 // batch_size)
    # one re-ask per experiment gathers the three instances its first-round batches dropped
    assert asked == first_round + (2 if fault in ("missing", "duplicate") and batch_size > 1 else 0)
    for record in Store(cfg.paths.store_dir):
        assert record.predictions == record.instance_labels  # every instance labelled, and right
        assert record.experiment.strategy == "decomposed"


def test_decomposed_records_what_stays_missing(tmp_path):
    with FakeServer() as server:
        server.batch_fault = "missing"
        cfg = config(tmp_path, server, "strategy=decomposed", "strategy.batch_size=5", "strategy.max_reasks=0",
                     "pattern=majority_first")
        run_job(cfg, tmp_path / "job")
    for record in Store(cfg.paths.store_dir):
        assert record.predictions.count(None) == 4  # one per batch of five, never asked again
        assert record.verdict in ("correct", "incorrect")


def test_a_failing_batch_leaves_the_experiment_unstored(tmp_path):
    with FakeServer() as server:
        server.faults = {"500": 100}
        cfg = config(tmp_path, server, "strategy=decomposed", "strategy.batch_size=10", "pattern=majority_first",
                     "infra_retries=0", "model.client_max_retries=0")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.unstored == 2 and not list(Store(cfg.paths.store_dir))


def test_strategies_sweep_and_are_part_of_the_key(tmp_path):
    keys = set()
    for strategy in ("single_call", "count_report", "decomposed"):
        cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", f"strategy={strategy}",
                      "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
        keys |= set(run_job(cfg, tmp_path / strategy).keys)
    assert len(keys) == 6


def test_strategy_and_variant_clash_is_refused(tmp_path):
    cfg = compose("model=mock", "task=arith", "setting=smoke", "strategy=decomposed", "prompt_variant=hint",
                  f"paths.results_dir={tmp_path}")
    with pytest.raises(ValueError, match="prompt_variant=standard"):
        run_job(cfg, tmp_path / "job")


def test_strategies_appear_as_rows_with_their_costs_and_count_errors(tmp_path):
    from mip.analysis.report import write_report
    from mip.analysis.results import load_local

    with FakeServer() as server:
        for strategy in ("single_call", "count_report", "decomposed"):
            for pattern in ("majority_first", "majority_middle"):
                batches = ["strategy.batch_size=5"] if strategy == "decomposed" else []
                run_job(config(tmp_path, server, f"strategy={strategy}", *batches, f"pattern={pattern}"),
                        tmp_path / f"{strategy}-{pattern}")
    frame = load_local([tmp_path / "store"])
    assert set(frame["model"]) == {"smollm2_135m_server", "smollm2_135m_server [count_report]",
                                   "smollm2_135m_server [decomposed]"}
    decomposed = frame[frame["strategy"] == "decomposed"]
    assert (decomposed["calls"] == 4).all() and (decomposed["instance_accuracy"] == 1.0).all()
    assert (frame.dropna(subset=["count_error_majority"])["count_error_majority"] == 0).all()
    report = write_report(frame, tmp_path / "report")
    text = report.read_text()
    for name in ("cost_and_tokens", "count_errors", "decomposed_instances", "position_error_rates"):
        assert name in text
    cost = pd.read_csv(tmp_path / "report" / "tables" / "cost_and_tokens.csv").set_index("model")
    assert cost.loc["smollm2_135m_server [decomposed]", "calls per experiment"] == 4.0
    assert cost.loc["smollm2_135m_server", "total cost (USD)"] == pytest.approx(4 * 0.00042)


@pytest.mark.parametrize("overrides, message", [
    (["strategy=decomposed", "prompt_variant=hint"], "The decomposed strategy asks with its own prompt; use it with "
                                                    "prompt_variant=standard."),
    (["strategy=count_report", "prompt_variant=self_prompt"], "The count_report strategy has its own prompt"),
    (["strategy=decomposed", "strategy.batch_size=0"], "needs strategy.batch_size >= 1"),
    (["strategy.name=majority_vote"], "Unknown strategy 'majority_vote'; choose one of single_call, count_report, "
                                     "decomposed."),
])
def test_settings_a_strategy_cannot_run_are_refused_before_any_data_is_read(overrides, message):
    from mip.job.checks import settings

    with pytest.raises(ValueError, match=re.escape(message)):
        settings(compose("model=mock", "task=arith", *overrides))


@pytest.mark.parametrize("answers", ["whole", "none"])
def test_a_decomposed_dry_run_counts_what_the_run_sends(tmp_path, answers):
    """The dry run counts a decomposed attempt by its batches (n = 20, batch_size = 7:
    three calls, not one). Where every batch comes back whole, the run sends exactly the
    expected count; where no batch holds a label, each of the three attempts asks every batch
    again in each round: exactly the ceiling. Counted at the server: calls, prompt tokens (the
    job's estimate of each prompt it received) and output limits."""
    from mip.job.tokens import estimate_tokens

    settings = ("strategy=decomposed", "strategy.batch_size=7", "pattern=majority_first", "model.deterministic=false")
    with FakeServer() as server:
        if answers == "none":
            server.faults = {"garbage": 10**6}  # "I could not decide.": no label in any answer
        cfg = config(tmp_path, server, *settings)
        dry = run_job(config(tmp_path, server, *settings, "dry_run=true"), tmp_path / "dry").per_task["arith"]
        assert not server.bodies  # a dry run calls nothing
        summary = run_job(cfg, tmp_path / "job")
        bodies = list(server.bodies)
    sent = (len(bodies), sum(estimate_tokens(b["messages"][-1]["content"], cfg.model.chars_per_token) for b in bodies),
            sum(b["max_tokens"] for b in bodies))
    prefix, prompt = ("", "sent_prompt_tokens") if answers == "whole" else ("ceiling_", "ceiling_prompt_tokens")
    assert sent == (dry[f"{prefix}calls"], dry[prompt], dry[f"{prefix}output_tokens" if prefix else "max_output_tokens"])
    assert dry["calls"] == 2 * 3 and dry["ceiling_calls"] == 2 * 3 * 3 * 3  # 3 batches; 3 rounds × 3 attempts at most
    assert summary.calls == len(bodies) and summary.max_output_tokens == sent[2]


def test_self_prompting_is_a_strategy_of_two_calls_chosen_as_a_prompt_variant(tmp_path):
    """prompt_variant=self_prompt (the paper's name) runs the self-prompting strategy: its dry
    run counts the two calls of each attempt, and the run makes them; its records keep the
    paper's experiment (prompt_variant self_prompt, strategy single_call)."""
    from mip.strategies import build

    from .conftest import run_entry

    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first",
                    "prompt_variant=standard,self_prompt", "dry_run=true", f"paths.results_dir={tmp_path}")
    assert ran.returncode == 0, ran.stderr[-2000:]
    for variant, calls in (("standard", 2), ("self_prompt", 4)):  # each variant its own slice
        title = f"  mock budget=smoke prompt_variant={variant} strategy=single_call"
        line = next(x for x in ran.stdout.splitlines() if x.startswith(title + ":"))
        assert f"one attempt each, {calls} calls" in line
    cfg = compose("model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first",
                  "prompt_variant=self_prompt", "progress=false", f"paths.results_dir={tmp_path}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.calls == 4 and type(build(cfg.strategy, "self_prompt")).__name__ == "SelfPrompting"
    for record in Store(cfg.paths.store_dir):
        assert [s.name for s in record.attempts[0].stages] == ["instruction", "answer"]
        assert (record.experiment.prompt_variant, record.experiment.strategy) == ("self_prompt", "single_call")


def test_a_job_builds_its_strategy_once(tmp_path, monkeypatch):
    """mip.job.check_job builds it; planning, the dry run and the loop use that one."""
    from mip.strategies import Strategy

    built = []
    real = Strategy.__init__
    monkeypatch.setattr(Strategy, "__init__", lambda self, *a: built.append(type(self)) or real(self, *a))
    for dry in ("true", "false"):
        cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "strategy=decomposed",
                      f"dry_run={dry}", "progress=false", f"paths.results_dir={tmp_path}")
        run_job(cfg, tmp_path / dry)
    assert len(built) == 2  # one a job


def test_each_strategy_has_its_own_settings():
    """decomposed's batch_size is decomposed's: on another strategy it is a typo, refused at
    composition, and it never enters that strategy's key (mip.experiment.keys keeps scheme 2's bytes)."""
    from hydra.errors import ConfigCompositionException

    from mip.strategies.decomposed import DecomposedConfig

    assert isinstance(compose("strategy=decomposed", "strategy.batch_size=9").strategy, DecomposedConfig)
    with pytest.raises(ConfigCompositionException):
        compose("strategy=single_call", "strategy.batch_size=9")


@pytest.mark.parametrize("strategy, settings", [("single_call", {}), ("decomposed", {"batch_size": 7, "max_reasks": 2})])
def test_a_job_config_saved_when_every_strategy_had_decomposed_s_settings_still_loads(tmp_path, strategy, settings):
    """A job's config.yaml of mip <= 0.3 kept batch_size and max_reasks on every strategy:
    it loads, each strategy with its own settings."""
    from dataclasses import asdict

    import yaml

    from mip.entry.config_store import load_saved
    from mip.config.redact import to_plain

    saved = to_plain(compose("model=mock", "task=arith"))
    saved["strategy"] = {"name": strategy, "batch_size": settings.get("batch_size", 50), "max_reasks": 2}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    loaded = load_saved(tmp_path / "config.yaml")
    assert asdict(loaded.strategy) == {"name": strategy, **settings}


def test_run_py_builds_a_jobs_strategy_once(tmp_path):
    """Through run.py too: the job's one check of its settings (mip.job.check_job) builds it,
    and the job runs with that one."""
    import os
    import subprocess
    import sys

    from .conftest import REPO

    script = """
import runpy, sys
from mip.strategies import Strategy
built, real = [], Strategy.__init__
Strategy.__init__ = lambda self, *a: built.append(type(self).__name__) or real(self, *a)
sys.argv = ["run.py", "model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false",
            "strategy=decomposed"]
try:
    runpy.run_path("run.py", run_name="__main__")
finally:
    print("BUILT", built)
"""
    env = {**os.environ, "MIP_RESULTS_DIR": str(tmp_path / "results")}
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "BUILT ['Decomposed']" in proc.stdout, proc.stdout[-500:]
    assert list((tmp_path / "results" / "store").rglob("pack-*.jsonl"))  # the job ran and stored
