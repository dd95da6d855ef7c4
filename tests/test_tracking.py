"""W&B mirrors the store: an offline run folder holds a table row per experiment, as they are stored,
each once over reruns; the mode follows the user (mip.tracking.tracker)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from mip.tracking import tracker as tracking
from mip.config import redact
from mip.job import run_job
from mip.store import Store
from mip.tracking.tracker import NullTracker, WandbTracker, build_tracker, job_run_id, wandb_mode

from .conftest import REPO, compose
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
        cfg = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
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


def test_a_rerun_logs_only_what_its_run_lacks(tmp_path, wandb_env):
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "logger=wandb",
                  "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(cfg, tmp_path / "job1")
    again = run_job(cfg, tmp_path / "job2")
    assert again.stored_now == 0
    assert [len(t["data"]) for t in tables(tmp_path / "job1")] == [2]
    assert tables(tmp_path / "job2") == []  # the run holds both rows already
    assert {p.name.split("-", 3)[-1] for p in (tmp_path / "job2" / "wandb").glob("offline-run-*")} == {job_run_id(cfg)}


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


# --- the mode: one function, the user's word wins ---------------------------------------

KEY = {"WANDB_API_KEY": "k"}


@pytest.mark.parametrize(
    "logger_mode,environ,expected",
    [
        (None, {}, "offline"),
        (None, KEY, "online"),
        (None, {**KEY, "WANDB_MODE": "offline"}, "offline"),  # a key does not override the user's offline
        (None, {**KEY, "WANDB_MODE": "dryrun"}, "offline"),
        (None, {**KEY, "WANDB_MODE": "disabled"}, "disabled"),
        (None, {"WANDB_MODE": "online"}, "online"),
        (None, {"WANDB_MODE": "run"}, "online"),
        (None, {"WANDB_MODE": " Offline "}, "offline"),
        (None, {**KEY, "WANDB_MODE": ""}, "online"),  # set but empty: as if unset
        ("offline", KEY, "offline"),  # logger.mode wins over everything
        ("online", {"WANDB_MODE": "offline"}, "online"),
        ("disabled", {**KEY, "WANDB_MODE": "online"}, "disabled"),
        ("dryrun", {}, "offline"),
        ("", {"WANDB_MODE": "offline"}, "offline"),
    ],
)
def test_the_mode_table(logger_mode, environ, expected):
    assert wandb_mode(logger_mode, environ) == expected


@pytest.mark.parametrize("logger_mode,environ", [("offlne", {}), (None, {"WANDB_MODE": "off"})])
def test_a_misspelt_mode_is_an_error_naming_where_it_came_from(logger_mode, environ):
    with pytest.raises(ValueError, match="logger.mode" if logger_mode else "WANDB_MODE"):
        wandb_mode(logger_mode, environ)


def mock_cfg(tmp_path, *overrides):
    return compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "logger=wandb", "progress=false",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *overrides)


def test_offline_with_a_key_stays_offline_and_the_key_reaches_no_file(tmp_path, wandb_env, monkeypatch):
    secret = "planted0wandb0key0" + "7" * 22  # the 40 characters of a W&B key
    monkeypatch.setenv("WANDB_API_KEY", secret)
    monkeypatch.setenv("WANDB_MODE", "offline")
    summary = run_job(mock_cfg(tmp_path), tmp_path / "job")
    assert summary.ok and summary.stored_now == 6
    runs = [p.name for p in (tmp_path / "job" / "wandb").iterdir() if "run-" in p.name]
    assert runs and all(name.startswith("offline-run-") for name in runs)
    assert sum(len(t["data"]) for t in tables(tmp_path / "job")) == 6
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_disabled_logs_nothing_and_leaves_no_ledger(tmp_path, wandb_env, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    cfg = mock_cfg(tmp_path)
    assert isinstance(build_tracker(cfg, tmp_path / "job"), NullTracker)
    run_job(cfg, tmp_path / "job")
    assert not (tmp_path / "job" / "wandb").exists() and not (tmp_path / "wandb-ledger").exists()


def test_the_run_id_is_the_job_not_its_folder_or_logging():
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=random")
    same = compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "logger=wandb", "progress=false",
                   "paths.results_dir=elsewhere", "logger.group=another-sweep")
    other = compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "seed=1")
    assert job_run_id(cfg) == job_run_id(same) != job_run_id(other)


# --- rows reach W&B as they are stored, in batches ---------------------------------------

def stored_records(tmp_path):
    """Six stored mock records (and the config that stored them)."""
    cfg = mock_cfg(tmp_path, "logger=none")
    run_job(cfg, tmp_path / "filled")
    records = sorted(Store(cfg.paths.store_dir), key=lambda r: r.key)
    assert len(records) == 6
    return mock_cfg(tmp_path), records


def test_rows_are_logged_in_batches_as_records_arrive(tmp_path, wandb_env):
    cfg, records = stored_records(tmp_path)
    tracker = WandbTracker(cfg, tmp_path / "job", "offline", flush_rows=2)
    held = []
    for record in records[:5]:
        tracker.log_record(record, "the prompt")
        held.append(sum(len(t["data"]) for t in tables(tmp_path / "job")))
    assert held == [0, 2, 2, 4, 4]  # before finish: a kill now keeps 4 rows
    tracker.finish(SimpleNamespace(unstored=0))
    assert sorted(row[0] for t in tables(tmp_path / "job") for row in t["data"]) == [r.key for r in records[:5]]


def test_rows_held_too_long_are_logged_with_the_next_record(tmp_path, wandb_env):
    cfg, records = stored_records(tmp_path)
    now = [0.0]
    tracker = WandbTracker(cfg, tmp_path / "job", "offline", flush_rows=100, clock=lambda: now[0])
    tracker.log_record(records[0], None)
    now[0] = tracking.FLUSH_EVERY_S - 1
    tracker.log_record(records[1], None)
    assert tables(tmp_path / "job") == []
    now[0] = tracking.FLUSH_EVERY_S + 0.5
    tracker.log_record(records[2], None)
    assert [len(t["data"]) for t in tables(tmp_path / "job")] == [3]
    tracker.finish(SimpleNamespace(unstored=0))


KILLED_JOB = """
import os, signal, sys
from pathlib import Path
from mip.store import Store
from mip.tracking.tracker import WandbTracker
from tests.conftest import compose

folder, kill_after, lost, overrides = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "lost", sys.argv[4:]
cfg = compose(*overrides)
tracker = WandbTracker(cfg, folder, "offline", flush_rows=2)
if lost:  # the rows are handed over but never reach the run's files (an upload a kill cut short)
    tracker.run.log = lambda *args, **kwargs: None
for i, record in enumerate(sorted(Store(cfg.paths.store_dir), key=lambda r: r.key)):
    if i == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)  # no finish, no flush, no atexit
    tracker.log_record(record, "the prompt")
"""


def job_env():
    """A separate job: its own wandb service (not this process's, which WANDB_SERVICE would share)."""
    return {**{k: v for k, v in os.environ.items() if k != "WANDB_SERVICE"}, "PYTHONPATH": str(REPO)}


def killed_job(tmp_path, folder: str, lost: bool) -> list[str]:
    """Log the six stored records in a job killed (SIGKILL) after handing five over; the keys its run's files hold."""
    overrides = ["model=mock", "task=arith", "setting=smoke", "pattern=random", "logger=wandb", "progress=false",
                 f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}"]
    proc = subprocess.run([sys.executable, "-c", KILLED_JOB, str(tmp_path / folder), "5", "lost" if lost else "kept",
                           *overrides], cwd=REPO, env=job_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    return [row[0] for t in tables(tmp_path / folder) for row in t["data"]]


def test_a_killed_job_keeps_its_batches_and_a_rerun_sends_every_unconfirmed_row_once(tmp_path, wandb_env):
    cfg, records = stored_records(tmp_path)
    kept = killed_job(tmp_path, "killed", lost=False)
    assert sorted(kept) == [r.key for r in records[:4]]  # two batches of two; the fifth was held
    again = run_job(cfg, tmp_path / "rerun")  # everything is stored: no call; the run is never finished, so
    assert again.stored_now == 0 and again.calls == 0  # nothing counts as W&B's yet: all six go again, once each
    added = [row[0] for t in tables(tmp_path / "rerun") for row in t["data"]]
    assert sorted(added) == [r.key for r in records]
    run_job(cfg, tmp_path / "third")  # the rerun finished: W&B holds every row, none is sent again
    assert tables(tmp_path / "third") == []


def test_rows_handed_to_wandb_but_lost_by_a_kill_are_sent_again(tmp_path, wandb_env):
    """The ledger once said "sent" when the rows were only handed to wandb's async upload."""
    cfg, records = stored_records(tmp_path)
    assert killed_job(tmp_path, "killed", lost=True) == []  # four rows handed over, none written
    assert tracking.Ledger.of(cfg.logger.project, cfg.paths.results_dir, job_run_id(cfg), "offline").confirmed == {}
    run_job(cfg, tmp_path / "rerun")
    added = [row[0] for t in tables(tmp_path / "rerun") for row in t["data"]]
    assert sorted(added) == [r.key for r in records]  # each row once: none lost for good


def test_the_summary_covers_the_whole_job_also_when_a_rerun_logs_few_rows(tmp_path, wandb_env, monkeypatch):
    cfg, records = stored_records(tmp_path)
    first = WandbTracker(cfg, tmp_path / "job1", "offline", flush_rows=2)
    for record in records[:4]:
        first.log_record(record, None)  # the ledger now holds four rows; no finish (killed)
    import wandb

    summaries = []
    real_init = wandb.init

    def init(*args, **kwargs):
        run = real_init(*args, **kwargs)
        real_finish = run.finish
        run.finish = lambda *a, **k: (summaries.append(dict(run.summary)), real_finish(*a, **k))
        return run

    monkeypatch.setattr(wandb, "init", init)
    second = WandbTracker(cfg, tmp_path / "job2", "offline", flush_rows=2)
    for record in records[4:]:
        second.log_record(record, None)
    second.finish(SimpleNamespace(unstored=0))
    assert summaries[-1]["experiments"] == 6


def test_a_key_on_the_command_line_or_in_the_console_reaches_no_wandb_file(tmp_path, wandb_env, monkeypatch):
    secret = "sk-planted-on-the-command-line-31337"
    monkeypatch.setattr(sys, "argv", ["run.py", "logger=wandb", f"+model.extra_body.api_key={secret}"])
    cfg, records = stored_records(tmp_path)
    tracker = WandbTracker(cfg, tmp_path / "job", "offline", flush_rows=2)
    print(f"a server echoed the key: {secret}")
    print(f"a server echoed the key: {secret}", file=sys.stderr)
    for record in records:
        tracker.log_record(record, None)
    tracker.finish(SimpleNamespace(unstored=0))
    files = [p for p in (tmp_path / "job").rglob("*") if p.is_file()]
    assert any(p.suffix == ".wandb" for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), path


def test_an_unreadable_ledger_turns_wandb_off_and_the_job_goes_on(tmp_path, wandb_env, capsys):
    cfg = mock_cfg(tmp_path)
    ledger = tracking.Ledger.of(cfg.logger.project, cfg.paths.results_dir, job_run_id(cfg), "offline").path
    ledger.mkdir(parents=True)  # a folder where the ledger file should be
    summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.stored_now == 6
    assert capsys.readouterr().err.count("W&B logging failed") == 1


LOGIN_CHECK = "from mip.tracking.tracker import logged_in, wandb_mode; print(wandb_mode(None, login=logged_in))"


@pytest.mark.parametrize("saved", [True, False])
def test_a_user_logged_in_with_wandb_login_runs_online(tmp_path, wandb_env, saved):
    """`wandb login` saves the key in ~/.netrc; without WANDB_API_KEY the job went offline silently.
    A fresh process (wandb keeps a session's credentials), with its own home and netrc."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "a1" * 20 + "\n" if saved else "")
    netrc.chmod(0o600)
    env = {**job_env(), "HOME": str(tmp_path), "NETRC": str(netrc)}
    proc = subprocess.run([sys.executable, "-c", LOGIN_CHECK], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] == ("online" if saved else "offline"), proc.stdout + proc.stderr[-2000:]
    assert "a1" * 20 not in proc.stdout + proc.stderr


def test_a_wandb_job_that_stores_nothing_logs_nothing_quietly(tmp_path, wandb_env, capsys):
    """Every request refused (HTTP 400): nothing is stored, so nothing is logged to W&B, and the
    run ends without a word about W&B (it said "W&B logging failed (FileNotFoundError …)")."""
    with FakeServer() as server:
        server.faults = {"400": 99}
        cfg = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
                      "model.tokenizer=null", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first",
                      "logger=wandb", "progress=false", f"paths.results_dir={tmp_path}",
                      f"paths.cache_dir={tmp_path / 'cache'}")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 0
    printed = capsys.readouterr()
    assert "W&B" not in printed.out + printed.err, printed.err[-2000:]
    assert tables(tmp_path / "job") == []
