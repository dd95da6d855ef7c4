"""Trust in the store: each case below once put a wrong number in a store
without any error. They run real run.py processes against the local fault server and read
the store's files directly, so they hold whatever the store's code looks like."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO, run_py
from . import stored
from .fake_server import FakeServer


def server_args(server: FakeServer, *more: str) -> list[str]:
    return ["model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
            "task=arith", "n=20", "p=0.6", "budget=smoke", "progress=false", *more]


def records(results: Path) -> list[dict]:
    return stored.records(results / "store" / "smollm2_135m_server" / "arith")


def started(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(REPO / "run.py"), *args], cwd=REPO, env=os.environ.copy(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float = 120, proc: subprocess.Popen | None = None) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the job ended early: {proc.stderr.read()[-2000:]}")
        time.sleep(0.05)
    assert condition(), "timed out"


# 1 ------------------------------------------------------------------- identity


def test_a_rerun_with_other_generation_settings_is_not_served_old_answers(results):
    """Reasoning, provider routing and quantisations shape the answer: changing them must
    call again, not reuse what the earlier settings stored."""
    with FakeServer() as server:
        first = run_py(*server_args(server, "pattern=majority_first"))
        assert first.returncode == 0, first.stderr[-2000:]
        assert len(server.log) == 2
        again = run_py(*server_args(server, "pattern=majority_first", "+model.reasoning.enabled=true",
                                    "model.provider.order=[Together]", "model.provider.quantizations=[fp8]"))
        assert again.returncode == 0, again.stderr[-2000:]
        assert "0 already stored" in again.stdout
        assert len(server.log) == 4
        body = server.bodies[-1]
        assert body["reasoning"] == {"enabled": True} and body["provider"]["quantizations"] == ["fp8"]
        same = run_py(*server_args(server, "pattern=majority_first", "model.max_concurrency=3"))  # shapes no answer
        assert "2 already stored" in same.stdout and len(server.log) == 4
    assert len(records(results)) == 4


# 2 ------------------------------------------------------------------- durable attempts


@pytest.mark.timeout(300)
def test_a_kill_between_attempt_rounds_pays_no_attempt_twice(results):
    """The first three calls of every prompt answer with no parseable answer; the job is killed
    while its second round is held at the server (after round one landed and was paid). The
    rerun carries on from round one: every record lists exactly the calls paid for it, three
    at most."""
    with FakeServer() as server:
        server.faults = {"garbage": 3}  # the held second call never reaches its client
        server.hold_call = 2
        args = server_args(server, "pattern=random", "order_seeds=[0,1,2,3]", "model.max_concurrency=8",
                           "model.deterministic=false")  # up to three attempts (§3.2)
        job = started(args)
        wait_for(lambda: server.held == 8, proc=job)  # round one answered for all 8, round two waiting
        job.send_signal(signal.SIGKILL)
        job.wait()
        assert sum(server.answered.values()) == 8 and records(results) == []
        server.release()
        rerun = run_py(*args)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        paid = dict(server.answered)
    stored = records(results)
    assert len(stored) == 8
    for record in stored:
        attempts = record["attempts"]
        assert [a["index"] for a in attempts] == [0, 1, 2] and record["verdict"] == "correct"
        assert [a["verdict"] for a in attempts] == ["invalid", "invalid", "correct"]
        assert record["attempts_allowed"] == 3
    assert sum(paid.values()) == sum(len(r["attempts"]) for r in stored) == 24
    assert max(paid.values()) == 3 and len(paid) == 8


# 3 ------------------------------------------------------------------- damaged records


def test_damaged_records_are_quarantined_and_asked_again(results):
    with FakeServer() as server:
        args = server_args(server, "pattern=random", "order_seeds=[0,1,2]")
        assert run_py(*args).returncode == 0
        lines = stored.entries(results / "store" / "smollm2_135m_server" / "arith")
        assert len(lines) == 6 and len(server.log) == 6
        lines[0].overwrite(lines[0].data[:200])  # truncated
        lines[1].overwrite(b"")  # emptied
        damaged = lines[2].json()
        del damaged["verdict"]  # a field dropped: fails the schema
        lines[2].overwrite(json.dumps(damaged).encode())
        stale = lines[0].path.parent / f".tmp-{socket.gethostname().split('.')[0]}-999999-0.json"  # a writer long gone
        stale.write_text("{")
        rerun = run_py(*args)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert "3 already stored" in rerun.stdout and len(server.log) == 9
        assert "damaged" in rerun.stderr
        assert "3 damaged record(s) in" in rerun.stdout  # the job's summary (mip.summary) lists them
    assert not stale.exists()
    assert len(records(results)) == 6 and all("verdict" in r for r in records(results))
    quarantine = results / "store" / ".quarantine"
    log = [json.loads(line) for line in (quarantine / "log.jsonl").read_text().splitlines()]
    assert sorted((Path(e["file"]).name, e["line_at"]) for e in log) == sorted((x.path.name, x.offset) for x in lines[:3])
    assert sorted(p.read_bytes().rstrip(b"\n") for p in quarantine.rglob("*.jsonl") if p.name != "log.jsonl") == \
        sorted(x.path.read_bytes()[x.offset:x.offset + len(x.data)] for x in lines[:3])


def test_records_are_flushed_to_disk_before_they_count(tmp_path, monkeypatch):
    from mip.data.files import atomic_write

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    atomic_write(tmp_path / "a" / "r.json", b"{}")
    assert len(synced) == 2  # the file, then its folder
    assert (tmp_path / "a" / "r.json").read_bytes() == b"{}"
    from tests.test_records import make_record

    from mip.store import Store

    datasynced: list[int] = []
    real_data = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: datasynced.append(fd) or real_data(fd))
    store = Store(tmp_path / "store")  # a store flushes in its own thread; flush() waits for the disk
    for i in range(20):
        store.put(make_record(f"k{i}"))
    store.flush()
    assert len(datasynced) >= 1 and len(set(datasynced)) == 1  # the pack, once per batch of lines
    assert len(synced) >= 2 + 1  # and its folder, once: the pack is new
    assert len(stored.entries(tmp_path / "store")) == 20
    before = len(datasynced)
    store.put(make_record("k20"))
    store.flush()
    assert len(datasynced) == before + 1  # a line is on disk before flush() returns


def test_damaged_filter_answers_are_asked_again_and_answers_belong_to_their_pool(results, tmp_path):
    from mip.tools.filtering import FilterResult, FilterStore

    store = FilterStore(tmp_path)
    common = dict(model="m", task="arith", prompt_hash="h", output="1", parsed="1", truth="1", correct=True,
                  created_at="2026-12-01T00:00:00+00:00")
    store.put(FilterResult(key="k1", instance_id="i1", pool_version="v1", **common))
    store.put(FilterResult(key="k2", instance_id="i2", pool_version="v2", **common))
    store.put(FilterResult(key="k3", instance_id="i3", pool_version="v1", **common))
    store.path("m", "arith", "k3").write_text('{"key": "k3"')
    assert set(store.all("m", "arith", "v1")) == {"i1"}  # i2 is another pool's; i3 is damaged
    assert store.valid_keys("m", "arith", ["k1", "k2", "k3"]) == {"k1", "k2"}
    assert not store.path("m", "arith", "k3").exists()
    assert (tmp_path / ".quarantine" / "log.jsonl").is_file()


# 4 ------------------------------------------------------------------- one plan, each experiment once


def test_a_seed_named_twice_is_one_experiment_paid_once(results):
    with FakeServer() as server:
        out = run_py(*server_args(server, "pattern=random", "order_seeds=[0,0,1]"))
        assert out.returncode == 0, out.stderr[-2000:]
        assert len(server.log) == 4 and len(set(k for k, _ in server.log)) == 4
        assert "KeyError" not in out.stderr and "named more than once" in out.stderr
    assert len(records(results)) == 4


# 5 ------------------------------------------------------------------- a claim file removed


@pytest.mark.timeout(300)
def test_a_removed_claim_file_does_not_let_a_second_job_pay_again(results):
    with FakeServer(latency_s=0.4) as server:  # 40 experiments, 2 at a time: the first job runs ≈ 8 s
        args = server_args(server, "pattern=random", f"order_seeds=[{','.join(map(str, range(20)))}]",
                           "model.max_concurrency=2")
        first = started(args)
        claims = results / "store" / ".claims" / "smollm2_135m_server"
        wait_for(lambda: len(records(results)) >= 2, proc=first)
        for claim in claims.glob("*.claim"):
            claim.unlink()
        second = run_py(*args)
        out, err = first.communicate(timeout=240)
        requested = [key for key, _ in server.log]
    assert first.returncode == 0, err[-2000:]
    assert second.returncode == 0, second.stderr[-2000:]
    assert len(requested) == 40 and len(set(requested)) == 40  # each experiment paid for once
    stored = records(results)
    assert len(stored) == 40 and len({r["key"] for r in stored}) == 40


# 6 ------------------------------------------------------------------- a folder per job


def test_jobs_started_in_the_same_second_get_folders_of_their_own(results):
    args = ["model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first", "progress=false"]
    jobs = [started(args) for _ in range(3)]
    for job in jobs:
        job.communicate(timeout=240)
        assert job.returncode == 0
    folders = [p.parent for p in (results / "runs").rglob("job.json")]
    assert len(folders) == 3 == len(set(folders))
    for folder in folders:
        manifest = json.loads((folder / "job.json").read_text())
        assert Path(manifest["output_dir"]).resolve() == folder.resolve()
        assert (folder / "config.yaml").is_file()


def test_the_report_lists_damaged_and_quarantined_records_and_counts_neither(results):
    from mip.analysis.report import write_report
    from mip.analysis.results import load_local

    with FakeServer() as server:
        args = server_args(server, "pattern=random", "order_seeds=[0,1,2]")
        assert run_py(*args).returncode == 0
        lines = stored.entries(results / "store" / "smollm2_135m_server" / "arith")
        lines[0].overwrite(b"")
        assert run_py(*args).returncode == 0  # the job quarantines it and asks again
        lines[1].overwrite(lines[1].data[:100])  # damaged after the last run
    frame = load_local([results / "store"])
    assert len(frame) == 5  # the damaged one is not counted
    report = write_report(frame, results / "report").read_text()
    assert f"Unreadable record {lines[1].path} (the line at byte {lines[1].offset}" in report
    assert "1 damaged record(s) were moved aside" in report
    assert f"{lines[0].path.name}, the line at byte {lines[0].offset}" in report


def test_a_disk_that_fails_to_flush_stops_the_job_with_a_clear_error(tmp_path, monkeypatch):
    import errno

    from mip.job import StoreError, run_job

    from .conftest import compose

    def failing(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    monkeypatch.setattr(os, "fdatasync", failing)
    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false",
                  f"paths.results_dir={tmp_path}")
    with pytest.raises(StoreError, match="Input/output error"):
        run_job(cfg, tmp_path / "job")


@pytest.fixture
def second_mount(tmp_path):
    """A folder on a file system of its own (a tmpfs mounted for the test; skipped where mount is
    not permitted), unmounted afterwards."""
    folder = tmp_path / "other-mount"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()[:200]}")
    try:
        assert os.stat(folder).st_dev != os.stat(tmp_path).st_dev
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("where", ["task folder", "record"])
def test_a_damaged_record_behind_a_symlink_to_another_mount_is_quarantined(tmp_path, second_mount, where):
    """A record file that cannot be read, lying on another file
    system behind a symlink (the task folder, or the record itself, links there), is moved to
    the store's quarantine (copied, flushed, then removed: a rename across mounts fails with
    EXDEV) and the job completes, asking that experiment again."""
    from .conftest import compose
    from mip.job import run_job
    from mip.job.checks import load_pools
    from mip.job.job_run import pending
    from mip.store import Store

    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=random", "order_seeds=[0,1,2]", "progress=false",
                  f"paths.results_dir={tmp_path / 'results'}")
    store = Store(cfg.paths.store_dir)
    plans, _, _ = pending(cfg, store, load_pools(cfg))
    key = plans[0].key
    task_folder = Path(cfg.paths.store_dir) / "mock" / "arith"
    if where == "task folder":
        task_folder.parent.mkdir(parents=True)
        task_folder.symlink_to(second_mount)
        damaged = task_folder / f"{key}.json"
    else:
        task_folder.mkdir(parents=True)
        damaged = task_folder / f"{key}.json"
        damaged.symlink_to(second_mount / f"{key}.json")
    (second_mount / f"{key}.json").write_text('{"key": "' + key + '", "verdict": ')  # cut short
    summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.stored_now == len(plans) == 6
    assert not damaged.exists() and not damaged.is_symlink()
    quarantine = Path(cfg.paths.store_dir) / ".quarantine"
    moved = [p for p in quarantine.rglob("*.json")]
    assert len(moved) == 1 and not moved[0].is_symlink() and moved[0].read_text().startswith('{"key": "' + key)
    assert [e["file"] for e in map(json.loads, (quarantine / "log.jsonl").read_text().splitlines())] == \
        [f"mock/arith/{key}.json"]
    assert len(list(Store(cfg.paths.store_dir, readonly=True))) == 6
