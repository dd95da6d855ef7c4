"""Record packs (mip.store.packs): a job's records as lines appended to a file of its own.

What they must keep of the store's contract (docs/store.md): a record counts once it reads back
valid; a kill loses at most the line in flight; a damaged line never counts, is moved aside
once and asked again; many writers never tear each other's lines; old stores (a file per
record) read as before; each key counts once.
"""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
import warnings

import orjson
import pytest

from mip.analysis.folders import open_folder
from mip.store import Store, iter_records, quarantined, record_json
from mip.store.packs import Line, is_pack, scan
from tests.test_records import make_record

MODEL, TASK = "mock", "arith"


def packs(root):
    return sorted(p for p in (root / MODEL / TASK).iterdir() if is_pack(p.name))


def test_a_store_appends_each_record_as_one_line_of_its_own_pack(tmp_path):
    store = Store(tmp_path)
    records = [make_record(f"k{i}") for i in range(3)]
    lines = [store.put(r) for r in records]
    store.flush()
    [pack] = packs(tmp_path)
    assert all(line.pack == pack for line in lines)
    assert pack.read_bytes() == b"".join(record_json(r) + b"\n" for r in records)
    assert [line.offset for line in lines] == [0, lines[1].offset, lines[2].offset] and lines[1].offset > 0
    assert store.keys(MODEL, TASK) == {"k0", "k1", "k2"}
    assert [store.get(MODEL, TASK, f"k{i}") for i in range(3)] == records
    assert list(store) == records
    assert not [p for p in (tmp_path / MODEL / TASK).iterdir() if p.suffix == ".json"]  # no file per record
    store.close()
    second = Store(tmp_path)  # another job (or a rerun) writes a pack of its own
    second.put(make_record("k3"))
    second.close()
    assert len(packs(tmp_path)) == 2
    assert Store(tmp_path, readonly=True).keys(MODEL, TASK) == {"k0", "k1", "k2", "k3"}


def test_a_torn_last_line_is_never_read_and_its_experiment_is_asked_again(tmp_path):
    store = Store(tmp_path)
    store.put(make_record("k0"))
    store.close()
    [pack] = packs(tmp_path)
    torn = record_json(make_record("k1"))
    with open(pack, "ab") as f:
        f.write(torn[: len(torn) // 2])  # a kill in the middle of a write
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not damage: the experiment was in flight
        assert Store(tmp_path).valid_keys(MODEL, TASK, {"k0", "k1"}) == {"k0"}
        assert [r.key for r in iter_records([tmp_path])] == ["k0"]
    assert not quarantined(tmp_path)


def _overwrite(line: Line, data: bytes) -> None:
    """Damage a line in place, keeping its length (and so every other line where it was)."""
    data = data[: line.length].ljust(line.length)
    with open(line.pack, "r+b") as f:
        f.seek(line.offset)
        f.write(data)


@pytest.mark.parametrize("damage", ["truncated", "blank", "schema"])
def test_a_damaged_line_is_moved_aside_once_and_asked_again(tmp_path, damage, capsys):
    store = Store(tmp_path)
    lines = {f"k{i}": store.put(make_record(f"k{i}")) for i in range(3)}
    store.close()
    line = lines["k1"]
    if damage == "truncated":
        _overwrite(line, line.read()[:100])
    elif damage == "blank":
        _overwrite(line, b"")
    else:
        value = orjson.loads(line.read())
        del value["verdict"]
        _overwrite(line, orjson.dumps(value))
    reader = Store(tmp_path, readonly=True)  # a reader lists it and moves nothing
    with pytest.warns(UserWarning, match="the line at byte"):
        assert reader.valid_keys(MODEL, TASK, set(lines)) == {"k0", "k2"}
    assert reader.damaged and not quarantined(tmp_path)
    damaged: list = []
    with pytest.warns(UserWarning):
        assert sorted(r.key for r in iter_records([tmp_path], damaged)) == ["k0", "k2"]
    assert [(p, why.split(":")[0]) for p, why in damaged] == [(line.pack, f"the line at byte {line.offset}")]

    job = Store(tmp_path)  # a job moves it aside: it no longer counts, and is asked again
    assert job.valid_keys(MODEL, TASK, set(lines)) == {"k0", "k2"}
    assert "Copied the damaged line" in capsys.readouterr().err
    [moved] = quarantined(tmp_path)
    assert moved["line_at"] == line.offset and moved["file"] == f"{MODEL}/{TASK}/{line.pack.name}"
    assert (tmp_path / moved["moved_to"]).read_bytes().rstrip(b"\n") == line.read()
    job.put(make_record("k1"))  # asked again
    job.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once moved aside, no reader lists it again
        assert Store(tmp_path).valid_keys(MODEL, TASK, set(lines)) == set(lines)
        assert sorted(r.key for r in iter_records([tmp_path])) == ["k0", "k1", "k2"]
    assert len(quarantined(tmp_path)) == 1  # moved aside once, not at every read


def test_a_key_in_two_packs_and_an_old_file_counts_once(tmp_path):
    first, second = Store(tmp_path), Store(tmp_path)
    line = first.put(make_record("k0", verdict="incorrect"))
    second.put(make_record("k0"))
    first.close(), second.close()
    old = tmp_path / MODEL / TASK / "k0.json"  # a store written before packs: one file per record
    old.write_bytes(record_json(make_record("k0")))
    assert [r.key for r in iter_records([tmp_path])] == ["k0"]
    assert Store(tmp_path).get(MODEL, TASK, "k0").verdict == "incorrect"  # the oldest pack's line
    _overwrite(line, b"{")
    assert Store(tmp_path).get(MODEL, TASK, "k0").verdict == "correct"  # the next one, once the first is damaged


def test_an_old_store_with_a_file_per_record_reads_as_before(tmp_path):
    folder = tmp_path / MODEL / TASK
    folder.mkdir(parents=True)
    records = [make_record(f"k{i}") for i in range(3)]
    for r in records:
        (folder / f"{r.key}.json").write_bytes(record_json(r))
    store = Store(tmp_path)
    assert store.keys(MODEL, TASK) == {"k0", "k1", "k2"} and list(store) == records
    assert store.where(MODEL, TASK, "k1") == folder / "k1.json"
    store.put(make_record("k3"))  # new records go to a pack beside the files
    store.close()
    assert sorted(r.key for r in iter_records([tmp_path])) == ["k0", "k1", "k2", "k3"]
    assert len(open_folder(tmp_path).files) == 4  # three files and one pack


def test_a_write_that_fails_is_cut_back_so_the_next_line_is_whole(tmp_path, monkeypatch):
    store = Store(tmp_path)
    store.put(make_record("k0"))
    real = os.writev

    def half_then_full_disk(fd, buffers):
        os.write(fd, bytes(buffers[0][:50]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "writev", half_then_full_disk)
    with pytest.raises(OSError, match="No space"):
        store.put(make_record("k1"))
    monkeypatch.setattr(os, "writev", real)
    store.put(make_record("k2"))  # space freed: the job (or its rerun) writes on
    store.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(r.key for r in iter_records([tmp_path])) == ["k0", "k2"]


def _writer(root, start: int) -> None:
    store = Store(root)
    for i in range(start, start + 200):
        store.put(make_record(f"k{i}", instance_ids=["x" * 5000]))  # lines longer than a pipe's atomic write
    store.close()


def test_many_processes_write_one_store_without_tearing_a_line(tmp_path):
    context = mp.get_context("spawn")
    jobs = [context.Process(target=_writer, args=(tmp_path, start)) for start in (0, 200, 400, 600)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(60)
        assert job.exitcode == 0
    assert len(packs(tmp_path)) == 4
    for pack in packs(tmp_path):
        found, end = scan(pack)
        assert end == pack.stat().st_size and len(found) == 200
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(r.key for r in iter_records([tmp_path])) == sorted(f"k{i}" for i in range(800))


def test_a_job_folder_reads_only_its_own_keys_from_shared_packs(tmp_path):
    import json

    store = Store(tmp_path / "store")
    for i in range(4):
        store.put(make_record(f"k{i}"))
    store.close()
    job = tmp_path / "runs" / "a"
    job.mkdir(parents=True)
    (job / "job.json").write_text(json.dumps({"store_dir": str(tmp_path / "store"), "model": MODEL,
                                              "keys": ["k1", "k3"], "output_dir": str(job)}))
    assert sorted(r.key for r in open_folder(job).records()) == ["k1", "k3"]
    assert sorted(r.key for r in open_folder(tmp_path / "store").records()) == ["k0", "k1", "k2", "k3"]


def test_lines_longer_than_a_read_are_read_whole(tmp_path, monkeypatch):
    import mip.store.packs

    store = Store(tmp_path)
    records = [make_record(f"k{i}", instance_ids=["x" * 3000] * (i + 1)) for i in range(5)]
    for r in records:
        store.put(r)
    store.close()
    monkeypatch.setattr(mip.store.packs, "_CHUNK", 1000)  # every line spans several reads
    assert sorted(iter_records([tmp_path]), key=lambda r: r.key) == records
    found, end = scan(packs(tmp_path)[0], 0)
    assert [k for k, _ in found] == [r.key for r in records] and end == packs(tmp_path)[0].stat().st_size


def test_one_flush_covers_the_lines_appended_before_it_and_flush_waits_for_it(tmp_path, monkeypatch):
    """Waking the flushing thread for every line cost a context switch per record; lines now
    gather (here until flush() is called) and one fdatasync covers them, started after the last."""
    from mip.data.files import Syncer

    events: list[str] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: events.append("sync") or real(fd))
    monkeypatch.setattr(Syncer, "linger_s", 30.0)  # nothing but flush() ends the wait
    submit = Syncer.submit
    monkeypatch.setattr(Syncer, "submit", lambda self, *a, **k: events.append("wake") or submit(self, *a, **k))
    store = Store(tmp_path)
    for i in range(200):
        store.put(make_record(f"k{i}"))
        events.append("line")
    store.flush()
    assert events.count("wake") == 1  # the thread was woken once for 200 lines
    assert events.count("sync") == 1 and events[-1] == "sync"
    store.put(make_record("k200"))
    events.append("line")
    store.flush()
    assert events[-3:] == ["wake", "line", "sync"] and events.count("sync") == 2
    store.close()
    assert len(Store(tmp_path).keys(MODEL, TASK)) == 201


def flushing_threads() -> int:
    import threading

    return sum(t.name == "mip-fsync" for t in threading.enumerate())


def test_a_closed_store_ends_its_flushing_thread_and_can_write_again(tmp_path):
    """Each job makes a store and a sweep runs its jobs one after another in one process:
    a store's flushing thread ends when the store closes, with its lines on disk."""
    before = flushing_threads()
    store = Store(tmp_path)
    store.put(make_record("k0"))
    assert flushing_threads() == before + 1
    store.close()
    assert flushing_threads() == before
    assert Store(tmp_path).keys(MODEL, TASK) == {"k0"}  # on disk, read by another store
    store.put(make_record("k1"))  # closed, still usable: a new thread flushes
    store.flush()
    assert flushing_threads() == before + 1 and Store(tmp_path).keys(MODEL, TASK) == {"k0", "k1"}
    store.close()
    assert flushing_threads() == before


def test_a_disk_error_at_close_is_raised_and_the_thread_still_ends(tmp_path, monkeypatch):
    from mip.data.files import Syncer

    before = flushing_threads()
    syncer = Syncer()
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    monkeypatch.setattr(os, "fdatasync", lambda fd: (_ for _ in ()).throw(OSError(errno.EIO, "I/O error")))
    syncer.submit(fd, None)
    with pytest.raises(OSError, match="I/O error"):
        syncer.close()
    assert flushing_threads() == before


def test_jobs_run_one_after_another_leave_no_thread_behind(tmp_path):
    from mip.job import run_job
    from tests.test_runner import Scripted, config

    before = flushing_threads()
    for k in range(3):
        summary = run_job(config(tmp_path, f"seed={k}"), tmp_path / f"job{k}", backend=Scripted(['{"answer": "even_number"}']))
        assert summary.stored_now == summary.experiments > 0
    assert flushing_threads() == before


def test_a_packs_index_gives_its_keys_and_a_crash_behind_it_falls_back_to_the_pack(tmp_path, monkeypatch):
    """Reading back which keys a folder holds reads each pack's small index, not its records
    (a job's read-back would otherwise read every record of its task folder); an index left
    short or ahead by a crash gives way to the pack itself."""
    import mip.store.packs as packs_module
    from mip.store.packs import keys_file

    store = Store(tmp_path)
    lines = [store.put(make_record(f"k{i}")) for i in range(3)]
    store.close()
    [pack] = packs(tmp_path)
    expected = [(f"k{i}", lines[i]) for i in range(3)]
    read_from = []
    real = packs_module._complete
    monkeypatch.setattr(packs_module, "_complete", lambda p, start: read_from.append(start) or real(p, start))
    assert scan(pack) == (expected, pack.stat().st_size)
    assert read_from == []  # no record read
    index = keys_file(pack)
    whole = index.read_bytes()
    index.write_bytes(whole[: whole.index(b"\n") + 5])  # a crash: one entry and part of the next
    assert scan(pack) == (expected, pack.stat().st_size) and read_from[-1] == lines[1].offset
    index.write_bytes(whole + b"k3 %d 100\n" % pack.stat().st_size)  # an entry whose line never reached the disk
    assert scan(pack) == (expected, pack.stat().st_size)
    index.unlink()  # no index at all
    assert scan(pack) == (expected, pack.stat().st_size) and read_from[-1] == 0
    assert scan(pack, lines[2].offset)[0] == expected[2:]


def test_a_settled_pack_is_read_once_a_process_and_again_when_it_changes(tmp_path, monkeypatch):
    """A sweep's jobs, one after another in one process, each list the same task folders: a
    pack left alone for a while is read once, and read again only once it changed. A pack
    written a moment ago is never memoised (its time stamp is as coarse as the clock tick)."""
    import mip.store.packs as packs_module

    store = Store(tmp_path)
    lines = [store.put(make_record(f"k{i}")) for i in range(2)]
    store.close()
    [pack] = packs(tmp_path)
    read = []
    real = packs_module._scan
    monkeypatch.setattr(packs_module, "_scan", lambda p, *more: read.append(p) or real(p, *more))
    assert Store(tmp_path).keys(MODEL, TASK) == {"k0", "k1"} and Store(tmp_path).keys(MODEL, TASK) == {"k0", "k1"}
    assert len(read) == 2 and pack not in packs_module._SCANS  # just written: read each time
    old = pack.stat().st_mtime - 60
    os.utime(pack, (old, old))  # left alone for a minute
    assert [Store(tmp_path).keys(MODEL, TASK) for _ in range(3)] == [{"k0", "k1"}] * 3
    assert len(read) == 3  # read once for three jobs
    assert scan(pack, lines[1].offset)[0] == [("k1", lines[1])]
    with open(pack, "ab") as f:  # the pack grows (its job appends once more): read again
        f.write(record_json(make_record("k2")) + b"\n")
    assert Store(tmp_path).keys(MODEL, TASK) == {"k0", "k1", "k2"} and len(read) == 4


def test_a_pack_edited_in_place_is_read_again_not_through_its_stale_index(tmp_path):
    """A person edits a pack in place (a field of its first line made longer, as an editor saves
    it): its index's offsets no longer fall on its lines. The rerun reads the pack itself past
    the edit: every record still counts, nothing is quarantined and nothing is asked again."""
    from mip.job import run_job

    from .conftest import compose

    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false",
                  f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    first = run_job(cfg, tmp_path / "job1")
    assert first.stored_now == 2
    [pack] = packs(tmp_path / "store")
    text = pack.read_bytes()
    assert text.count(b'"mip_version":"') == 2
    pack.write_bytes(text.replace(b'"mip_version":"', b'"mip_version":"edited ', 1))  # its first line 7 bytes longer
    again = run_job(cfg, tmp_path / "job2")
    assert again.stored_now == 0 and again.calls == 0, again
    assert quarantined(tmp_path / "store") == []
    assert sorted(r.key for r in iter_records([tmp_path / "store"])) == sorted(r.key for r in Store(tmp_path / "store"))


def test_a_job_says_the_damaged_records_it_moves_aside_in_one_line_per_folder(tmp_path, capsys):
    """Three damaged lines of a pack and three damaged files of an older store, in one task
    folder: a job moves each aside (each logged in the quarantine) and says so in one line, as
    readers do (mip.store.reading.say_unreadable); a single one is named by itself."""
    store = Store(tmp_path)
    lines = {f"k{i}": store.put(make_record(f"k{i}")) for i in range(4)}
    store.close()
    for key in ("k0", "k1", "k2"):
        _overwrite(lines[key], b"")
    folder = tmp_path / MODEL / TASK
    for i in range(3):
        (folder / f"old{i}.json").write_text("{")
    job = Store(tmp_path)
    assert job.valid_keys(MODEL, TASK, {*lines, "old0", "old1", "old2"}) == {"k3"}
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 2, said  # the pack's lines, and the files
    quarantine = tmp_path / ".quarantine"
    assert sorted(line.split(" (")[0] for line in said) == [f"Copied 3 damaged lines of {folder} to {quarantine}",
                                                            f"Moved 3 damaged files of {folder} to {quarantine}"]
    assert all("will be asked again" in line for line in said)
    assert len(quarantined(tmp_path)) == 6
    _overwrite(lines["k3"], b"")
    assert Store(tmp_path).valid_keys(MODEL, TASK, {"k3"}) == set()
    assert capsys.readouterr().err.startswith(f"Copied the damaged line at byte {lines['k3'].offset} of")
