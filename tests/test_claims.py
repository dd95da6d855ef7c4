"""Claims: a job started while another runs the same experiments leaves them to it, so no
experiment is paid for twice; a killed job's claim frees its experiments."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mip.store import claims
from mip.data.files import local_disk
from mip.store import claim_files as claim_file_module
from mip.store import claim_quiet
from mip.store.claims import claim_experiments
from mip.store import Store
from mip.job import StoreError, run_job

from .conftest import REPO, run_py
from .stored import keys as stored_keys
from .fake_server import FakeServer
from .test_runner import Scripted, config


def nothing_stored() -> set[str]:
    return set()


def claim_files(root: Path) -> list[Path]:
    return sorted((root / claims.FOLDER).rglob("*.claim"))


def test_a_running_claim_keeps_its_experiments_until_released(tmp_path):
    first = claim_experiments(tmp_path, "m", ["a", "b", "c"], nothing_stored, "job-1")
    assert first.keys == {"a", "b", "c"} and not first.elsewhere
    second = claim_experiments(tmp_path, "m", ["b", "c", "d"], nothing_stored)
    assert second.keys == {"d"}
    assert set(second.elsewhere) == {"b", "c"}
    holder = second.elsewhere["b"]
    assert holder.pid == os.getpid() and holder.output_dir == "job-1"
    assert claim_experiments(tmp_path, "other-model", ["b"], nothing_stored).keys == {"b"}  # claims are per model
    first.release()
    third = claim_experiments(tmp_path, "m", ["a", "b", "c", "d"], nothing_stored)
    assert third.keys == {"a", "b", "c"} and set(third.elsewhere) == {"d"}
    second.release(), third.release()
    assert claim_files(tmp_path) == [] or all("other-model" in str(p) for p in claim_files(tmp_path))


def test_what_is_stored_is_never_claimed(tmp_path):
    with claim_experiments(tmp_path, "m", ["a", "b"], lambda: {"a"}) as claim:
        assert claim.keys == {"b"} and not claim.elsewhere
    assert claim_files(tmp_path) == []  # released on leaving the block


def test_the_claim_of_a_killed_job_frees_its_experiments(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from mip.store.claims import claim_experiments; "
         f"c = claim_experiments({str(tmp_path)!r}, 'm', ['a', 'b'], set); print(len(c.keys), flush=True); time.sleep(600)"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "2"
        assert claim_experiments(tmp_path, "m", ["a", "b"], nothing_stored).elsewhere.keys() == {"a", "b"}
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert len(claim_files(tmp_path)) == 1  # left behind by the killed job
    with claim_experiments(tmp_path, "m", ["a", "b"], nothing_stored) as claim:
        assert claim.keys == {"a", "b"} and not claim.elsewhere
        assert claim_files(tmp_path) == [claim.path]  # the dead job's claim is gone


def test_a_file_system_without_locks_runs_everything_and_says_so(tmp_path, monkeypatch, capsys):
    def no_locks(*args):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(claims.fcntl, "flock", no_locks)
    monkeypatch.setattr(claims, "_warned", set())
    for _ in range(2):
        claim = claim_experiments(tmp_path, "m", ["a", "b"], lambda: {"a"})
        assert claim.keys == {"b"} and claim.path is None
    assert capsys.readouterr().err.count("cannot lock files") == 1


def test_a_job_leaves_what_another_job_holds_and_a_rerun_takes_it(tmp_path, capsys):
    cfg = config(tmp_path, "n=20", "p=0.6")
    store = Path(cfg.paths.store_dir)
    first = run_job(cfg, tmp_path / "probe", backend=Scripted(['{"answer": "0"}']))
    keys = sorted(first.keys)
    for f in store.rglob("pack-*.jsonl"):  # the records gone, as if never stored
        f.unlink()
    held = claim_experiments(store, cfg.model.name, keys[:3], nothing_stored, "the other job")
    backend = Scripted(['{"answer": "0"}'])
    summary = run_job(cfg, tmp_path / "job", backend=backend)
    assert {r.id for r in backend.requests} == set(keys[3:])  # nothing the other job holds is called
    assert summary.left_to_other_jobs == 3 and summary.stored_now == len(keys) - 3 and summary.ok
    assert "3 experiment(s) of this job are being run by another job" in capsys.readouterr().err
    held.release()
    again = Scripted(['{"answer": "0"}'])
    summary = run_job(cfg, tmp_path / "rerun", backend=again)
    assert {r.id for r in again.requests} == set(keys[:3]) and summary.left_to_other_jobs == 0
    assert len(list(Store(store))) == len(keys)
    assert claim_files(store) == []  # every job gave its claim back


def test_a_job_that_stops_on_an_error_gives_its_claim_back(tmp_path, monkeypatch):
    cfg = config(tmp_path, "n=20", "p=0.6")

    def full(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Store, "put", full)
    with pytest.raises(StoreError, match="No space left"):
        run_job(cfg, tmp_path / "job", backend=Scripted(['{"answer": "0"}']))
    assert claim_files(Path(cfg.paths.store_dir)) == []


@pytest.mark.timeout(600)
def test_the_same_command_twice_at_once_pays_each_experiment_once(results):
    """Two run.py processes of one command, the second started while the first is calling:
    every experiment is requested once, stored once, and both exit cleanly."""
    with FakeServer(latency_s=0.5) as server:  # 60 experiments, 2 at a time: the first job runs ≈ 15 s
        args = ["model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                "model.max_concurrency=2", "task=arith", "n=20", "p=0.6", "pattern=random",
                f"order_seeds=[{','.join(map(str, range(30)))}]", "budget=smoke", "progress=false"]
        folder = results / "store" / "smollm2_135m_server" / "arith"
        first = subprocess.Popen([sys.executable, str(REPO / "run.py"), *args], cwd=REPO, env=os.environ.copy(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 300
        while time.time() < deadline and not stored_keys(folder) and first.poll() is None:
            time.sleep(0.05)
        second = run_py(*args)
        out, err = first.communicate(timeout=300)
        requested = [key for key, _ in server.log]
    assert len(requested) == 60 and len(set(requested)) == 60  # each experiment paid for once
    assert first.returncode == 0, err[-2000:]
    assert second.returncode == 0, second.stderr[-2000:]
    assert "left to a running job" in second.stdout
    records = list(Store(results / "store"))
    assert len(records) == 60 and len({r.key for r in records}) == 60


# claims hold to the last reply ------------------------------------------------


def test_a_claim_deleted_while_every_request_is_in_flight_still_holds(results):
    """The first job has all its requests in flight (none left to pull, so nothing checks a
    claim at a pull); the whole claims folder is deleted and the same command started: the
    second job leaves every experiment to the first, and each is requested once. Two experiments:
    before a first reply at most fail_fast.LIMIT (3) requests are in flight, so all of them are."""
    import shutil

    from .test_store_trust import server_args, started, wait_for

    with FakeServer() as server:
        server.hold_call = 1  # every first request waits until release(): both are in flight meanwhile
        args = server_args(server, "pattern=random", "order_seeds=[0]", "model.max_concurrency=4")
        first = started(args)
        wait_for(lambda: server.held == 2, proc=first)
        shutil.rmtree(results / "store" / claims.FOLDER)
        second = run_py(*args)
        server.release()
        out, err = first.communicate(timeout=240)
        calls = dict(server.calls)
    assert first.returncode == 0, err[-2000:]
    assert second.returncode == 0, second.stderr[-2000:]
    assert len(calls) == 2 and set(calls.values()) == {1}, calls  # each experiment paid for once
    assert "2 left to a running job" in second.stdout
    assert "claimed again" in err
    assert len(list(Store(results / "store"))) == 2


def test_a_job_that_claims_in_the_gap_leaves_the_older_claim_its_keys(tmp_path):
    """The claims folder is deleted and a second job claims before the running one wrote its
    claim again: the older claim keeps the keys, the younger sends none of them."""
    import shutil

    first = claim_experiments(tmp_path, "m", ["a", "b", "c"], nothing_stored, "job-1")
    assert first.holds("a")  # in flight
    # The gap, made sure of: the running job's check (every 0.1 s) waits until the second job
    # has claimed. Left to the scheduler, a busy machine sometimes let the check write the
    # claim again first, and the second job then rightly claimed only d.
    with first._mutex:
        shutil.rmtree(tmp_path / claims.FOLDER)
        second = claim_experiments(tmp_path, "m", ["a", "b", "c", "d"], nothing_stored, "job-2")
    assert second.keys == {"a", "b", "c", "d"}  # nothing on disk said otherwise
    assert [k for k in "abcd" if second.holds(k)] == ["d"]
    assert second.lost == {"a", "b", "c"} and second.elsewhere["a"].output_dir == "job-1"
    assert first.holds("b") and first.holds("c") and not first.lost
    assert len(claim_files(tmp_path)) == 2
    first.release(), second.release()
    assert claim_files(tmp_path) == []


def _foreign_claim(root: Path, age_s: float) -> Path:
    """A claim written by a job on another host, whose lock this host cannot see."""
    folder = root / claims.FOLDER / "m"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"node-7-{age_s:g}.claim"
    path.write_text('{"host": "node-7", "pid": 1, "started": "-", "output_dir": "far", "since": [0, ""], "keys": ["a"]}')
    os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


def test_a_claim_from_another_host_lives_while_its_heartbeat_does(tmp_path):
    live = _foreign_claim(tmp_path, age_s=1)
    with claim_experiments(tmp_path, "m", ["a", "b"], nothing_stored) as claim:
        assert claim.keys == {"b"} and claim.elsewhere["a"].host == "node-7"
    assert live.exists()
    live.unlink()
    dead = _foreign_claim(tmp_path, age_s=claims.STALE_S + 5)
    with claim_experiments(tmp_path, "m", ["a", "b"], nothing_stored) as claim:
        assert claim.keys == {"a", "b"}
    assert not dead.exists()  # cleared by the next job


def test_a_running_claim_refreshes_its_heartbeat(tmp_path, monkeypatch):
    monkeypatch.setattr(claims, "BEAT_S", 0.2)
    with claim_experiments(tmp_path, "m", ["a"], nothing_stored) as claim:
        os.utime(claim.path, (0, 0))
        deadline = time.time() + 30
        while time.time() < deadline and claim.path.stat().st_mtime < time.time() - 60:
            time.sleep(0.05)
        assert claim.path.stat().st_mtime > time.time() - 60


# the settle only where a running job's claim may be missing ---------------------


def _waits(claim, monkeypatch) -> list[float]:
    """The waits the claim's first ``holds`` makes (its settle), without waiting them."""
    slept: list[float] = []
    monkeypatch.setattr(claims.time, "sleep", slept.append)
    assert claim.holds(next(iter(claim.keys)))
    return [s for s in slept if s > 0]


def _quiet_folder(root: Path, model: str = "m", age_s: float = 10.0) -> Path:
    """A claims folder where a job claimed and finished long ago (its lock file stays)."""
    claim_experiments(root, model, ["x"], nothing_stored).release()
    folder = root / claims.FOLDER / model
    os.utime(folder / claim_quiet.LOCK, (time.time() - age_s, time.time() - age_s))  # its lock let go of then
    os.utime(folder, (time.time() - age_s, time.time() - age_s))
    claim_quiet._OWN.pop(folder, None)  # as a later process finds it
    claim_quiet._STAMPS.pop(folder, None)
    return folder


def _later(folder: Path) -> None:
    """Give the folder the time of a change by someone else now, to the nanosecond: kernels
    before 6.13 stamp it with a clock that ticks every few milliseconds, so a change made in the
    tick of this process's own last one could not be told from it (claim_files.others_changed)."""
    now = time.time_ns()
    os.utime(folder, ns=(now, now))


def test_a_claim_in_a_store_the_job_made_goes_out_at_once(tmp_path, monkeypatch):
    with claim_experiments(tmp_path / "new", "m", ["a", "b"], nothing_stored, new_store=True) as claim:
        assert not claim.settle and _waits(claim, monkeypatch) == []


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_quiet_claims_folder_on_a_local_disk_needs_no_settle(tmp_path, monkeypatch):
    _quiet_folder(tmp_path)
    with claim_experiments(tmp_path, "m", ["a", "b"], nothing_stored) as claim:
        assert not claim.settle and _waits(claim, monkeypatch) == []


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_claims_folder_that_just_changed_settles(tmp_path, monkeypatch):
    """A claim file someone else removed within SETTLE_S, or a claims folder made just now
    (deleted and made again), may hide a running job that has yet to write its claim again: wait."""
    folder = _quiet_folder(tmp_path)
    running = claim_experiments(tmp_path, "m", ["x"], nothing_stored)
    running.path.unlink()  # by hand, just now
    _later(running.path.parent)
    with claim_experiments(tmp_path, "m", ["a"], nothing_stored) as claim:
        assert claim.settle and _waits(claim, monkeypatch) == [pytest.approx(claims.SETTLE_S, abs=0.1)]
    running.release()
    fresh = tmp_path / "other"
    fresh.mkdir()  # the store exists, its claims folder does not: made now, as after `rm -r .claims`
    with claim_experiments(fresh, "m", ["a"], nothing_stored) as claim:
        assert claim.settle == pytest.approx(claims.SETTLE_S, abs=0.1)
    assert folder.exists()


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_another_jobs_release_just_now_settles(tmp_path, monkeypatch):
    """Another process's job released its claim just now: its change is not this process's own."""
    _quiet_folder(tmp_path)
    claim_experiments(tmp_path, "m", ["y"], nothing_stored).release()  # this process's own, first
    code = ("import sys; from mip.store.claims import claim_experiments; "
            "claim_experiments(sys.argv[1], 'm', ['x'], set).release()")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=REPO, timeout=60)
    folder = tmp_path / claims.FOLDER / "m"
    now = claim_file_module.listing(folder)
    assert claim_quiet.others_changed(folder, now).since == now[1]  # the time runs from that release


def _held_elsewhere(folder: Path, seconds: float) -> subprocess.Popen:
    """Another process that holds the claims folder's lock for ``seconds`` and changes nothing
    (a job whose experiments are all stored, listing a large store); returns once it let go."""
    code = ("import sys, time; from pathlib import Path; from mip.store.claim_quiet import holding\n"
            "with holding(Path(sys.argv[1]), 60):\n    time.sleep(float(sys.argv[2]))\n"
            "print('let go', flush=True); time.sleep(60)")
    other = subprocess.Popen([sys.executable, "-c", code, str(folder), str(seconds)], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)
    assert other.stdout.readline().strip() == "let go"
    return other


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_hold_of_the_lock_that_changes_nothing_counts_too(tmp_path, monkeypatch):
    """A claim file removed by hand, then the lock held for a while by a job that claims nothing
    (here, and in another process): the running job could not write its claim again meanwhile,
    so the next claim still waits nearly the whole settle."""
    folder = _quiet_folder(tmp_path)
    running = _removed_by_hand(tmp_path)

    def all_stored_slowly() -> set[str]:
        time.sleep(0.3)
        return {"a"}

    assert not claim_experiments(tmp_path, "m", ["a"], all_stored_slowly).keys  # this process's hold
    with claim_experiments(tmp_path, "m", ["b"], nothing_stored) as claim:
        assert claim.settle >= claims.SETTLE_S - 0.1
    other = _held_elsewhere(folder, 0.6)  # another process's hold, long after the removal
    try:
        with claim_experiments(tmp_path, "m", ["c"], nothing_stored) as claim:
            assert claim.settle >= claims.SETTLE_S - 0.2
    finally:
        other.kill()
        other.wait()
    running.release()


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_the_next_job_after_this_processs_own_release_goes_out_at_once(tmp_path, monkeypatch):
    """A sweep's jobs run one after another in one process: the claim file the last one removed
    hid no one's, so the next job does not wait for it, nor for its own claim written before."""
    _quiet_folder(tmp_path)
    for _ in range(3):
        with claim_experiments(tmp_path, "m", ["a", "b"], nothing_stored) as claim:
            assert claim.settle == 0 and _waits(claim, monkeypatch) == []


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_someone_elses_change_before_this_processs_release_still_counts(tmp_path, monkeypatch):
    """A claim file removed by hand just before this process released its own: the release
    does not hide that change, and the next claim waits."""
    _quiet_folder(tmp_path)
    mine = claim_experiments(tmp_path, "m", ["a"], nothing_stored)
    other = claim_experiments(tmp_path, "m", ["z"], nothing_stored)
    other.path.unlink()  # by hand
    _later(other.path.parent)
    mine.release()
    with claim_experiments(tmp_path, "m", ["b"], nothing_stored) as claim:
        assert claim.settle == pytest.approx(claims.SETTLE_S, abs=0.1)
    other.release()


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_claim_waits_only_what_is_left_of_the_settle(tmp_path, monkeypatch):
    """Someone else changed the folder 0.3 s ago (by the disk's clock): about 0.1 s is left to
    wait (less the moments between that change and this job taking the folder's lock)."""
    folder = _quiet_folder(tmp_path, age_s=0.3)
    with claim_experiments(tmp_path, "m", ["a"], nothing_stored) as claim:
        assert 0 < claim.settle <= claims.SETTLE_S - 0.3 + 0.01
        assert claim.settle == pytest.approx(claims.SETTLE_S - 0.3, abs=0.08)
        assert _waits(claim, monkeypatch) == [pytest.approx(claim.settle, abs=0.02)]
    assert folder.exists()


def _unwatched(root: Path) -> claims.Claim:
    """A running job's claim whose heartbeat is stopped (it would write a removed file again within 0.1 s)."""
    running = claim_experiments(root, "m", ["z"], nothing_stored)
    running._stop.set()
    running._thread.join()
    return running


def _removed_by_hand(root: Path) -> claims.Claim:
    """A running job's claim whose file someone removed just now (the job has yet to see it)."""
    running = _unwatched(root)
    running.path.unlink()
    _later(running.path.parent)
    return running


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_time_this_process_held_the_claims_lock_does_not_count_as_quiet(tmp_path, monkeypatch):
    """A running job writes a removed claim again under the folder's lock. A job that held the
    lock for 0.3 s after the removal (a slow listing of a large store) gave it no chance in that
    time: it still waits nearly the whole settle, and so does the job right after it in this
    process (jobs in threads of one process)."""
    _quiet_folder(tmp_path)
    running = _removed_by_hand(tmp_path)

    def slow_store() -> set[str]:
        time.sleep(0.3)
        return set()

    with claim_experiments(tmp_path, "m", ["a"], slow_store) as first:
        assert first.settle >= claims.SETTLE_S - 0.05
        with claim_experiments(tmp_path, "m", ["b"], nothing_stored) as second:
            assert second.settle >= claims.SETTLE_S - 0.1
    running.release()


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_someone_elses_removal_during_this_processs_own_change_still_counts(tmp_path, monkeypatch):
    """A claim file removed between this process's two looks around its own release (the folder's
    time stamp then covers both changes) is told apart by the claim files' names."""
    _quiet_folder(tmp_path)
    running = _unwatched(tmp_path)
    mine = claim_experiments(tmp_path, "m", ["a"], nothing_stored)
    real_unlink = Path.unlink

    def unlink_both(path: Path, missing_ok: bool = False) -> None:
        real_unlink(path, missing_ok=missing_ok)
        if path == mine.path:
            real_unlink(running.path)  # by hand, in the same moment

    monkeypatch.setattr(Path, "unlink", unlink_both)
    mine.release()
    monkeypatch.undo()
    with claim_experiments(tmp_path, "m", ["b"], nothing_stored) as claim:
        assert claim.settle == pytest.approx(claims.SETTLE_S, abs=0.1)
    running.release()


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_claim_file_removed_while_the_claims_are_read_settles(tmp_path, monkeypatch):
    """The folder was quiet when the job took the lock, but a claim went while the job read
    the claims (before it could see it): the job waits, as if the folder had just changed."""
    folder = _quiet_folder(tmp_path)
    running = claim_experiments(tmp_path, "m", ["z"], nothing_stored)
    os.utime(folder, (time.time() - 10, time.time() - 10))

    def stored_while_removed() -> set[str]:
        running.path.unlink()  # by hand, say
        return set()

    with claim_experiments(tmp_path, "m", ["a"], stored_while_removed) as claim:
        assert claim.settle
    running.release()


def test_a_network_file_system_always_settles(tmp_path, monkeypatch):
    """NFS may answer a stat from its cache, so the folder's time proves nothing there."""
    monkeypatch.setattr(claim_quiet, "local_disk", lambda path: False)
    _quiet_folder(tmp_path)
    with claim_experiments(tmp_path, "m", ["a"], nothing_stored) as claim:
        assert claim.settle


@pytest.mark.parametrize("path, local", [("/scratch/u/store", False), ("/home/u/my store/x", True),
                                         ("/data/store", True), ("/dev/shm/s", True), ("/lus/store", False)])
def test_local_disk_reads_the_mount_table(path, local):
    table = "\n".join([
        "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
        "30 22 0:40 / /scratch rw - nfs4 server:/scratch rw,vers=4.2",
        "31 22 8:2 / /home/u/my\\040store rw - xfs /dev/sdb rw",
        "32 22 0:41 / /lus rw - lustre 10.0.0.1@tcp:/fs rw",
        "33 22 0:42 / /dev/shm rw - tmpfs tmpfs rw",
    ])
    assert local_disk(Path(path), mountinfo=table) is local


def test_a_rerun_on_a_quiet_store_sends_at_once(tmp_path, monkeypatch):
    """A job on a store it made, and a later one on that store once it is quiet, send their
    first request without the settle; the claims keep paying each experiment once."""
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(claims.time, "sleep", lambda s: slept.append(s) or real_sleep(min(s, 0.01)))
    first = run_job(config(tmp_path, "pattern=random", "order_seeds=[0]"), tmp_path / "job-1")
    assert first.stored_now == first.calls == 2
    if local_disk(tmp_path):
        folder = tmp_path / "store" / claims.FOLDER / "mock"
        os.utime(folder, (time.time() - 10, time.time() - 10))
        again = run_job(config(tmp_path, "pattern=random", "order_seeds=[0,1]"), tmp_path / "job-2")
        assert again.stored_now == again.calls == 2 and again.already_stored == 2
    assert [s for s in slept if s >= claims.CHECK_EVERY_S] == []


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_sweeps_jobs_in_one_process_send_at_once(tmp_path, monkeypatch):
    """Jobs run one after another on one store, as Hydra's default launcher runs a sweep: none
    waits the settle for the claim file the job before it removed, and each experiment is paid once."""
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(claims.time, "sleep", lambda s: slept.append(s) or real_sleep(min(s, 0.01)))
    for seeds, new in (("[0]", 2), ("[0,1]", 2), ("[0,1,2]", 2)):
        job = run_job(config(tmp_path, "pattern=random", f"order_seeds={seeds}"), tmp_path / f"job-{seeds}")
        assert job.stored_now == job.calls == new
    assert [s for s in slept if s >= claims.CHECK_EVERY_S] == []


@pytest.mark.skipif(not local_disk(Path(__file__)), reason="needs the tests on a local disk")
def test_a_removal_in_the_same_clock_tick_as_this_processs_release_still_counts(tmp_path, monkeypatch):
    """On kernels before 6.13 a claim file removed in the clock tick right after this process's
    own release leaves the folder's time stamp as the release left it: the claim files tell."""
    _quiet_folder(tmp_path)
    running = _unwatched(tmp_path)
    mine = claim_experiments(tmp_path, "m", ["a"], nothing_stored)
    mine.release()
    folder = running.path.parent
    stamp = os.stat(folder).st_mtime_ns
    running.path.unlink()  # by hand, in the same tick
    os.utime(folder, ns=(stamp, stamp))
    with claim_experiments(tmp_path, "m", ["b"], nothing_stored) as claim:
        assert claim.settle == pytest.approx(claims.SETTLE_S, abs=0.1)
    running.release()
