"""Records and the local store (docs/store.md)."""

from __future__ import annotations

import multiprocessing as mp
import warnings
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mip.experiment.keys import experiment_key
from mip.data.columns import JsonColumn, JsonStrings
from mip.experiment.prompts import prompt_hash
from mip.experiment.records import Attempt, CallOutput, Experiment, Record, Stage
from mip.experiment.scoring import InvalidKind, Verdict
from mip.store import Store, iter_records, quarantined, read_record, record_json


def make_record(key: str = "k1", task: str = "arith", **changes) -> Record:
    experiment = Experiment(model="mock", task=task, n=10, p=0.6, majority_label="even_number", seed=0,
                            pattern="majority_first", prompt_variant="standard", budget="smoke")
    fields = dict(key=key, experiment=experiment, pool_version="pv", instance_ids=["a"], instance_labels=["even_number"],
                  prompt_hash="h", verdict="correct", answer="even_number", created_at="2026-11-30T00:00:00+00:00")
    return Record(**{**fields, **changes})


def test_put_get_keys(tmp_path):
    store = Store(tmp_path)
    record = make_record()
    line = store.put(record)
    assert line.pack.parent == tmp_path / "mock" / "arith" and line.read() == record_json(record)
    assert store.keys("mock", "arith") == {"k1"}
    assert store.get("mock", "arith", "k1") == record
    assert list(store) == [record]
    assert not list(line.pack.parent.glob(".tmp-*"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(output=st.text(), usage=st.dictionaries(st.text(max_size=8), json_values, max_size=5), latency=st.floats())
@example(output="\ud800", usage={}, latency=0.5).via("a lone surrogate: neither writes it")
@example(output="", usage={"n": 2**70}, latency=0.5).via("past 64 bits: pydantic writes it")
def test_records_are_written_as_pydantic_writes_them(output, usage, latency):
    """The store writes records with orjson for speed; the bytes must be pydantic's, and
    whatever orjson refuses (lone surrogates, integers past 64 bits) goes through pydantic."""
    stage = Stage(name="answer", prompt_hash="h", output=output, reasoning=output[::-1], usage=usage, latency_s=latency)
    record = make_record(attempts=[Attempt(index=0, stages=[stage], verdict="correct")],
                         config={"model": {"name": "x", "stop": ("a", "b")}, "usage": usage})
    try:
        expected = record.__pydantic_serializer__.to_json(record)
    except ValueError:  # neither can write it
        with pytest.raises(ValueError):
            record_json(record)
        return
    assert record_json(record) == expected


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.text(st.characters(blacklist_categories=["Cs"])), min_size=1, max_size=40), data=st.data())
@example(values=["", "\x00", 'say "hi"', "back\\slash", "é", "\U0001f600", "\n\t\x1f", "x" * 300], data=None).via("escapes")
def test_a_json_column_takes_what_orjson_writes_of_the_list(values, data):
    """Ids and labels reach a record as a gather over their JSON-encoded column: the bytes must
    be orjson's (and so pydantic's) of the same list, in any order, with repeats and padding."""
    positions = (np.array(data.draw(st.lists(st.integers(0, len(values) - 1), max_size=60)), dtype=np.intp) if data
                 else np.array([7, 0, 1, 2, 3, 4, 5, 6, 1], dtype=np.intp))
    taken = JsonColumn(values).take(positions)
    expected = [values[i] for i in positions]
    assert taken.json == orjson.dumps(expected)
    assert taken == expected and expected == taken and list(taken) == expected and len(taken) == len(expected)


def test_json_strings_read_as_the_list_and_write_the_same_record():
    column = JsonColumn(["id-0", "id-1", "é-2"])
    ids = column.take(np.array([2, 0]))
    assert ids[0] == "é-2" and ids[-1] == "id-0" and ids[:1] == ["é-2"] and "id-0" in ids
    assert ids != ["id-0", "é-2"] and ids != "é-2id-0" and repr(ids) == "JsonStrings(['é-2', 'id-0'])"
    assert JsonColumn([]).take(np.array([], dtype=np.intp)) == [] and isinstance(ids, JsonStrings)
    few = ["neg", "pos", "neg, really"] * 100  # few distinct values: kept as a code per position
    positions = np.array([5, 1, 0, 299, 2])
    assert JsonColumn(few).take(positions).json == orjson.dumps([few[i] for i in positions])
    plain = make_record(instance_ids=["é-2", "id-0"], instance_labels=["even_number", "odd_number"])
    labels = JsonColumn(["odd_number", "even_number"]).take(np.array([1, 0]))
    fast = Record.model_construct(**{**plain.__dict__, "instance_ids": ids, "instance_labels": labels})
    assert record_json(fast) == record_json(plain) == plain.__pydantic_serializer__.to_json(plain)


def test_a_value_without_utf8_form_takes_the_plain_path(tmp_path):
    """An id with a lone surrogate (from an undecodable file) has no JSON column; a record
    holding JsonStrings beside a value only pydantic writes still goes through pydantic."""
    assert JsonColumn.of(["ok", "bad\udc80"]) is None and JsonColumn.of(["ok"]) is not None
    ids = JsonColumn(["a"]).take(np.array([0]))
    record = make_record()
    fast = Record.model_construct(**{**record.__dict__, "instance_ids": ids, "config": {"big": 2**70}})
    path = tmp_path / "r.json"
    path.write_bytes(record_json(fast))
    assert read_record(path).instance_ids == ["a"] and read_record(path).config == {"big": 2**70}


def test_unreadable_record_is_skipped_with_a_warning_naming_it(tmp_path):
    store = Store(tmp_path)
    store.put(make_record("good"))
    bad = tmp_path / "mock" / "arith" / "bad.json"
    bad.write_text('{"key": "bad", "trunc')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = list(iter_records([tmp_path]))
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


def test_a_store_under_a_folder_named_wandb_or_pools_is_read(tmp_path):
    """Folders skipped when reading records are judged below the folder read, not along its
    absolute path (MIP_RESULTS_DIR=/data/wandb/res)."""
    stores = [tmp_path / "wandb" / "res" / "store", tmp_path / "pools" / "store", tmp_path / "plain"]
    for i, root in enumerate(stores):
        Store(root).put(make_record(f"k{i}"))
    (tmp_path / "plain" / "wandb").mkdir()
    (tmp_path / "plain" / "wandb" / "run.json").write_text("{}")  # a W&B file inside a store is still skipped
    damaged: list = []
    assert sorted(r.key for r in iter_records(stores, damaged)) == ["k0", "k1", "k2"] and damaged == []


# --------------------------------------------------------------------------- records on disk stay as they were

#: Records as the store wrote them before verdicts were an enum and a stage's call fields had
#: one home (commit ae1c19f): every verdict, every invalid kind, two-stage attempts.
FIXTURES = Path(__file__).parent / "fixtures" / "records"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_a_record_written_before_loads_and_is_written_back_byte_for_byte(path, tmp_path):
    stored = path.read_bytes()
    record = Record.model_validate_json(stored)
    assert record_json(record) == stored == record.__pydantic_serializer__.to_json(record)
    assert isinstance(record.verdict, Verdict) and all(isinstance(a.verdict, Verdict) for a in record.attempts)
    e = record.experiment
    store = Store(tmp_path)
    assert store.put(record).read() == stored and store.get(e.model, e.task, record.key) == record
    for attempt, as_stored in zip(record.attempts, orjson.loads(stored)["attempts"]):
        store.put_attempt(e.model, e.task, "k", attempt)  # a paid attempt kept under .attempts/
        kept = tmp_path / ".attempts" / e.model / e.task / f"k.{attempt.index}.json"
        assert kept.read_bytes() == orjson.dumps(as_stored)


def test_the_fixtures_hold_every_verdict_and_invalid_kind():
    records = [Record.model_validate_json(p.read_bytes()) for p in FIXTURES.glob("*.json")]
    assert {r.verdict for r in records} == set(Verdict)
    assert {a.invalid_kind for r in records for a in r.attempts} | {r.invalid_kind for r in records} == {*InvalidKind, None}


def test_an_unknown_verdict_fails_the_schema_and_the_store_quarantines_it(tmp_path):
    stored = orjson.loads((FIXTURES / "tie_is_incorrect.json").read_bytes())
    with pytest.raises(ValidationError, match="'correct', 'incorrect' or 'invalid'"):
        Record.model_validate({**stored, "verdict": "maybe"})
    with pytest.raises(ValidationError, match="'input_overflow', 'parse' or 'truncated'"):
        Record.model_validate({**stored, "verdict": "invalid", "invalid_kind": "parse_failure"})
    store = Store(tmp_path)
    e = Record.model_validate(stored).experiment
    path = store.path(e.model, e.task, stored["key"])
    path.parent.mkdir(parents=True)
    path.write_bytes(orjson.dumps({**stored, "verdict": "maybe"}))
    assert store.valid_keys(e.model, e.task, {stored["key"]}) == set() and not path.exists()
    [moved] = quarantined(tmp_path)
    assert moved["why"] == "ValidationError: verdict: Input should be 'correct', 'incorrect' or 'invalid', got 'maybe'"


def test_a_stage_keeps_every_field_a_completion_returned_in_the_order_records_have_always_had():
    from mip.models import Completion, Request
    from mip.strategies import stage_of

    shared = set(CallOutput.model_fields)
    assert shared < set(Completion.model_fields) and shared < set(Stage.model_fields)
    assert set(Completion.model_fields) - shared == {"id", "error"}
    assert list(Stage.model_fields) == [  # a record's JSON keys, in order
        "name", "prompt", "prompt_hash", "output", "reasoning", "finish_reason", "prompt_tokens", "completion_tokens",
        "reasoning_tokens", "max_tokens", "latency_s", "usage", "reasoning_raw", "reasoning_from", "provider",
        "served_model", "context_refusal"]
    values = {"output": "o", "reasoning": "r", "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 2,
              "reasoning_tokens": 3, "latency_s": 0.5, "usage": {"cost": 0.1}, "reasoning_raw": {"reasoning_details": []},
              "reasoning_from": ["reasoning"], "provider": "p", "served_model": "m", "context_refusal": "HTTP 400: too long"}
    assert shared - set(values) == {"max_tokens"}  # a new shared field needs a value here
    stage = stage_of("answer", Request("k", "the prompt", 96), Completion("k", **values, error=None))
    assert stage.model_dump(include=shared) == {**values, "max_tokens": 96}
    assert stage.prompt is None and stage.prompt_hash == prompt_hash("the prompt")


def test_a_completion_refuses_a_field_it_does_not_have():
    from mip.models import Completion

    assert Completion("r1", output="x").output == "x"
    with pytest.raises(ValidationError, match="text"):
        Completion("r1", text="x")  # mip 0.2's name: an error, not a silently empty output


def test_a_records_time_is_utc_to_the_second_and_moves_with_the_clock(monkeypatch):
    """``created_at`` is formatted once a second (mip.job.provenance.now): the same text
    within a second, the next second's text after it, never a fraction."""
    import time

    from mip.job import provenance

    clock = [1_796_342_400.25]  # 2026-12-04T00:00:00.25 UTC
    monkeypatch.setattr(time, "time", lambda: clock[0])
    assert provenance.now() == "2026-12-04T00:00:00+00:00"
    clock[0] = 1_796_342_400.99
    assert provenance.now() == "2026-12-04T00:00:00+00:00"
    clock[0] = 1_796_342_401.0
    assert provenance.now() == "2026-12-04T00:00:01+00:00"
    clock[0] = 1_796_428_862.5  # a day later
    assert provenance.now() == "2026-12-05T00:01:02+00:00"
