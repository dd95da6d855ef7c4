"""W&B mirrors the store: an offline run folder holds a table row per experiment."""

from __future__ import annotations

import json

import pytest

from mip.config import redact
from mip.store import Store
from mip.job import run_job

from .conftest import compose
from .fake_server import FakeServer


@pytest.fixture
def wandb_env(tmp_path, monkeypatch):
    for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home" / var.lower()))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")


def tables(folder):
    return [json.loads(p.read_text()) for p in folder.rglob("offline-run-*/files/media/table/**/*.table.json")]


def test_offline_run_holds_every_experiment_and_no_secret(tmp_path, wandb_env, monkeypatch):
    secret = "sk-planted-WANDB-77aa"
    monkeypatch.setenv("MIP_TEST_API_KEY", secret)
    with FakeServer(reasoning_shape="reasoning_content") as server:
        cfg = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
                      "model.api_key_env=MIP_TEST_API_KEY", "task=arith", "setting=smoke", "budget=smoke",
                      "pattern=random", "logger=wandb", "logger.group=test-sweep", "progress=false",
                      f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok
    (table,) = tables(tmp_path / "job")
    rows = [dict(zip(table["columns"], row)) for row in table["data"]]
    assert len(rows) == 6
    assert {r["key"] for r in rows} == {r.key for r in Store(cfg.paths.store_dir)}
    for row in rows:
        assert row["verdict"] == "correct" and row["prompt"].startswith("Task: ")
        assert row["reasoning"].startswith("Instance 1 is even") and row["output"].startswith('{"answer"')
        assert row["pattern"] == "random" and row["order_seed"] in (0, 1, 2)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_a_rerun_logs_the_whole_job_again(tmp_path, wandb_env):
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "logger=wandb",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(cfg, tmp_path / "job1")
    again = run_job(cfg, tmp_path / "job2")
    assert again.stored_now == 0
    (table,) = tables(tmp_path / "job2")
    assert len(table["data"]) == 2


def test_wandb_failing_never_blocks_local_records(tmp_path, wandb_env, monkeypatch, capsys):
    import wandb

    def broken(*args, **kwargs):
        raise ConnectionError("api.wandb.ai unreachable")

    monkeypatch.setattr(wandb, "init", broken)
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_last", "logger=wandb",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.stored_now == 2
    assert capsys.readouterr().err.count("W&B logging failed") == 1


def test_redact_hides_pasted_secrets_but_keeps_variable_names():
    cfg = {"api_key_env": "OPENROUTER_API_KEY", "extra_body": {"api_key": "sk-1", "headers": {"Authorization": "Bearer x"}},
           "max_tokens": 5, "reasoning_tokens": 3}
    assert redact(cfg) == {"api_key_env": "OPENROUTER_API_KEY", "extra_body": {"api_key": "***", "headers": {"Authorization": "***"}},
                           "max_tokens": 5, "reasoning_tokens": 3}
