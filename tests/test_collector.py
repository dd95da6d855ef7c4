"""The cycle collector while a job calls (mip.job.collector): tuned inside, as it was after,
whatever the job did, and shared by jobs in threads of one process."""

from __future__ import annotations

import gc
import threading

import pytest

from mip.job import collector, run_job
from mip.job.loop import JobLoop
from tests.test_runner import Scripted, config


@pytest.fixture(autouse=True)
def default_collector():
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)
    (gc.enable if enabled else gc.disable)()


def test_inside_a_job_the_collector_scans_less_and_afterwards_as_before(tmp_path):
    seen = []

    class Watching(Scripted):
        def generate(self, requests):
            seen.append((gc.get_threshold(), gc.get_freeze_count()))
            yield from super().generate(requests)

    summary = run_job(config(tmp_path), tmp_path / "job", backend=Watching(['{"answer": "even_number"}']))
    assert summary.stored_now == summary.experiments > 0
    (threshold, frozen), *_ = seen
    assert threshold == (collector.YOUNG_EVERY, 10, 10) and frozen == 0  # nothing frozen: no garbage kept past a job
    assert gc.get_threshold() == (700, 10, 10)


def test_a_job_that_fails_puts_the_collector_back(tmp_path, monkeypatch):
    def broken(self, result, bar):
        raise KeyError("a bug in the loop")

    monkeypatch.setattr(JobLoop, "_land", broken)
    with pytest.raises(KeyError):
        run_job(config(tmp_path), tmp_path / "job", backend=Scripted(['{"answer": "even_number"}']))
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_jobs_in_threads_share_the_setting_and_the_last_to_end_restores_it():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    during = []

    def first():
        with collector.calling():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with collector.calling():
            second_in.set()
            first_out.wait(5)
            during.append(gc.get_threshold()[0])  # the first has ended, this one still calls

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert during == [collector.YOUNG_EVERY]
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_what_the_process_chose_stays_its_own():
    gc.disable()
    with collector.calling():
        assert not gc.isenabled()  # off stays off
    assert not gc.isenabled() and gc.get_threshold() == (700, 10, 10)
    gc.enable()
    gc.set_threshold(50_000, 20, 20)
    with collector.calling():
        assert gc.get_threshold() == (50_000, 20, 20)  # a larger threshold is kept
    assert gc.get_threshold() == (50_000, 20, 20)


def test_cyclic_garbage_left_between_jobs_is_collected_by_a_later_job():
    """Freezing the process's objects for each job would freeze the garbage left since the
    last one with them; a sweep's process would keep it job after job."""
    import weakref

    class Node:
        pass

    def garbage():
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    left = [garbage() for _ in range(100)]  # cycles left by a job, nothing collected since
    with collector.calling():
        gc.collect()  # a collection during the next job's calls
    assert all(ref() is None for ref in left)
