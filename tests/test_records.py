"""Records and the local store (DESIGN.md §5)."""

from __future__ import annotations

import multiprocessing as mp
import warnings

from mip.records import Experiment, Record, Store, experiment_key


def make_record(key: str = "k1", task: str = "arith", **changes) -> Record:
    experiment = Experiment(model="mock", task=task, n=10, p=0.6, majority_label="even_number", seed=0,
                            pattern="majority_first", prompt_variant="standard", budget="smoke")
    fields = dict(key=key, experiment=experiment, pool_version="pv", instance_ids=["a"], instance_labels=["even_number"],
                  prompt_hash="h", verdict="correct", answer="even_number", created_at="2026-11-30T00:00:00+00:00")
    return Record(**{**fields, **changes})


def test_put_get_keys(tmp_path):
    store = Store(tmp_path)
    record = make_record()
    path = store.put(record)
    assert path == tmp_path / "mock" / "arith" / "k1.json"
    assert store.keys("mock", "arith") == {"k1"}
    assert store.get("mock", "arith", "k1") == record
    assert list(store) == [record]
    assert not list(path.parent.glob(".tmp-*"))


def test_unreadable_record_is_skipped_with_a_warning_naming_it(tmp_path):
    store = Store(tmp_path)
    store.put(make_record("good"))
    bad = tmp_path / "mock" / "arith" / "bad.json"
    bad.write_text('{"key": "bad", "trunc')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = list(store)
    assert [r.key for r in records] == ["good"]
    assert any("bad.json" in str(w.message) for w in caught)


def test_key_changes_with_every_field_that_changes_the_prompt_or_generation():
    e = make_record().experiment
    base = experiment_key(e, "pv", {"max_tokens": 96})
    assert base == experiment_key(e, "pv", {"max_tokens": 96})
    assert base != experiment_key(e, "pv2", {"max_tokens": 96})
    assert base != experiment_key(e, "pv", {"max_tokens": 97})
    for change in ({"seed": 1}, {"pattern": "random", "order_seed": 0}, {"majority_label": "odd_number"},
                   {"n": 20}, {"p": 0.7}, {"prompt_variant": "hint"}, {"budget": "20k"}, {"model": "other"}):
        assert experiment_key(e.model_copy(update=change), "pv", {"max_tokens": 96}) != base


def _writer(root: str, worker: int) -> None:
    store = Store(root)
    for i in range(50):
        store.put(make_record(f"w{worker}-{i}", attempts=[], answer=None, verdict="invalid", invalid_kind="parse"))
        store.put(make_record("shared"))  # every writer also rewrites one record


def test_many_processes_write_one_store_without_corruption(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = Store(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any unreadable record fails the test
        records = list(store)
    assert len(records) == 4 * 50 + 1
    assert len(store.keys("mock", "arith")) == 201
