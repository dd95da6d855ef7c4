"""One home per concept: each concept is defined once and every user reads
that definition, so changing it in its home changes every user."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mip.config.shaping import not_answer_shaping, setting, shapes_answer

from .conftest import REPO, compose, run_entry
from .test_analyze import grid


# --------------------------------------------------------------------------- valid verdicts
def test_which_verdicts_are_valid_is_read_from_one_set(monkeypatch):
    from mip.experiment import scoring
    from mip.tools import run_summary as summary
    from mip.tracking import wandb_run
    from mip.experiment.scoring import VALID_VERDICTS, Verdict

    assert VALID_VERDICTS == {v.value for v in Verdict if v.valid} == {"correct", "incorrect"}
    got = wandb_run.summary_metrics(["correct", "incorrect", "invalid", "invalid"])
    assert got["accuracy_valid_only"] == 0.5 and got["invalid_rate"] == 0.5
    # the W&B summary and the verdict table read the set, not a comparison of their own
    monkeypatch.setattr(wandb_run, "VALID_VERDICTS", frozenset({"correct"}))
    assert wandb_run.summary_metrics(["correct", "incorrect"])["accuracy_valid_only"] == 1.0
    assert scoring.VALID_VERDICTS is summary.VALID_VERDICTS


# --------------------------------------------------------------------------- simulated models
def test_a_planted_model_is_known_by_its_config_never_its_name(tmp_path):
    """A simulated model named ``reader`` runs (old main refused a name without 'simulated'),
    and the report names it as planted from its config's ``traces``."""
    grid(tmp_path, ["model=simulated_first_k", "model.name=reader"], [(20, 0.6)], patterns=["majority_first"], seeds=(0,))
    models = tmp_path / "models"
    models.mkdir()
    (models / "reader.yaml").write_text("defaults:\n  - /model_schema/simulated@_here_\nname: reader\nmodel_id: simulated\n")
    (models / "simulated_lookalike.yaml").write_text("defaults:\n  - /model_schema/mock@_here_\nname: simulated_lookalike\n"
                                                     "model_id: mock\ntraces: full\n")
    ran = run_entry("analyze.py", f"results=[{tmp_path / 'store'}]", f"out_dir={tmp_path / 'out'}", "core=[20,0.6]",
                    f"coverage.model_dir={models}")
    assert ran.returncode == 0, ran.stderr[-2000:]
    text = (tmp_path / "out" / "report.md").read_text()
    assert "Simulated models (a planted, known positional rule, not an LLM): reader." in text


def test_the_planted_test_reads_the_declared_traces():
    from mip.analysis.report.model_sets import TracePool

    pool = TracePool(declared={"reader": "planted", "simulated_lookalike": "full"})
    assert pool.planted(["reader", "simulated_lookalike", "other"]) == ["reader"]


# --------------------------------------------------------------------------- two labels
def test_the_two_labels_check_is_one_function_for_tasks_and_audits(monkeypatch):
    from mip.tools import audit
    from mip.config import AuditOptions
    from mip.config import task as task_schema
    from mip.job import checks

    ran = run_entry("run.py", "task=arith", "task.arith.labels=[even,even]", "dry_run=true")
    assert ran.returncode == 2 and "exactly two distinct labels" in ran.stderr, ran.stderr[-2000:]
    with pytest.raises(audit.AuditError, match="exactly two distinct labels"):
        audit.label_counts(AuditOptions(data="x.csv", text_col="t", label_col="l", labels=["a", "a"]))
    assert audit.two_distinct_labels is checks.two_distinct_labels is task_schema.two_distinct_labels


# --------------------------------------------------------------------------- tokenizer names
def test_tokenizer_names_are_decided_in_one_place(tmp_path):
    from mip.job.tokens import OfflineTokenizer
    from mip.models.tokenizer import find_tokenizer

    model = compose("model=smollm2_135m_server", "model.model_id=auto", "model.tokenizer=mock").model
    assert OfflineTokenizer(model, tmp_path)._candidates() == []
    assert find_tokenizer("auto") == (None, "the model config names no tokenizer (model.tokenizer)")


# --------------------------------------------------------------------------- metrics
def test_the_verdict_table_has_a_column_per_registered_metric(monkeypatch):
    import pandas as pd

    from mip.analysis import stats
    from mip.tools import run_summary as summary

    frame = pd.DataFrame({"pattern": ["random"] * 4, "verdict": ["correct", "correct", "incorrect", "invalid"],
                          "invalid_kind": [None, None, None, "parse"]})
    table = summary.verdict_table(frame)
    assert table.loc["random", "valid-only acc %"] == pytest.approx(66.7) and table.loc["random", "all-experiment acc %"] == 50.0
    invalid = stats.Metric("_invalid", "invalid rate", lambda c: 1 - c["valid"] / c["experiments"])
    monkeypatch.setitem(stats.METRICS, "invalid", invalid)
    assert summary.verdict_table(frame).loc["random", "invalid rate %"] == 25.0


# --------------------------------------------------------------------------- paths
ENTRY_CONFIGS = ("config", "audit", "filter", "analyze", "attribute")


def test_results_and_cache_paths_live_in_one_config_group():
    for path in (REPO / "conf").glob("*.yaml"):
        text = path.read_text()
        assert "MIP_RESULTS_DIR" not in text and "MIP_CACHE_DIR" not in text, path
        assert "- paths: default" in text or path.stem not in ENTRY_CONFIGS, path
    assert "MIP_RESULTS_DIR" in (REPO / "conf" / "paths" / "default.yaml").read_text()


@pytest.mark.parametrize("config_name", ENTRY_CONFIGS)
def test_every_entry_point_follows_paths_results_dir(config_name, tmp_path):
    cfg = compose(f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path}/cache", config_name=config_name)
    assert Path(cfg.paths.store_dir) == tmp_path / "store" and Path(cfg.paths.cache_dir) == tmp_path / "cache"
    if config_name == "analyze":
        assert cfg.results == [f"{tmp_path}/store"] and cfg.out_dir == f"{tmp_path}/report" and cfg.filter_dir == f"{tmp_path}/filter"
    if config_name == "attribute":
        assert cfg.results == [f"{tmp_path}/store"] and cfg.pools_dir == f"{tmp_path}/pools"
        assert cfg.out_dir.startswith(f"{tmp_path}/attribution/") and not hasattr(cfg, "cache_dir")


# --------------------------------------------------------------------------- answer shaping
def test_whether_a_field_shapes_an_answer_is_declared_on_the_field():
    from mip.experiment import keys
    from mip.config import Config, OpenAICompatModelConfig
    from mip.models import schemas

    (timeout,) = [f for f in dataclasses.fields(OpenAICompatModelConfig) if f.name == "request_timeout_s"]
    assert not shapes_answer(timeout) and timeout.metadata["why"] == "how long to wait for an answer"
    assert "dry_run" in not_answer_shaping(Config) and keys.not_answer_shaping("model", schemas().values())["mock.latency_s"]
    assert "NOT_ANSWER_SHAPING" not in (REPO / "mip" / "experiment" / "keys.py").read_text()  # no second list far from the fields

    @dataclasses.dataclass
    class Mine(OpenAICompatModelConfig):
        quiet: int = setting(1, why="a test's field")
        loud: int = 1

    keyed = keys._keyed(Mine(name="m", model_id="x"), "model")
    assert "loud" in keyed and "quiet" not in keyed and "request_timeout_s" not in keyed
    assert keys.shaping.not_answer_shaping(Mine)["quiet"] == "a test's field"
