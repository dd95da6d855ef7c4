"""Loaders and label rules on shared/data/raw (counts from its README), and pools."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pandas as pd
import pytest

from mip.data import DataError, build_pool
from mip.data.pools import deduplicate, sample_pool
from mip.data.sources import LOADERS, LoadResult, Row, gsm8k_label, ner_label, occurrence_label

from .conftest import RAW, REPO, compose, needs_raw


@pytest.fixture(scope="module")
def tasks():
    return compose("task=all").task


def load(task_cfg, data_dir=RAW) -> LoadResult:
    return LOADERS[task_cfg.source.loader](task_cfg, data_dir)


# ----------------------------------------------------------------- label rules


@pytest.mark.parametrize(
    "answer,expected",
    [("so 72\n#### 72", "even_number"), ("#### 1,201", "odd_number"), ("#### -3", "odd_number"),
     ("#### -1,000", "even_number"), ("no marker", None), ("#### 3.5", None)],
)
def test_math_label_is_parity_after_hashes(answer, expected):
    assert gsm8k_label(answer)[0] == expected


@pytest.mark.parametrize(
    "tags,expected",
    [(["B-PER", "I-PER", "O"], "PER"), (["O", "B-LOC"], "LOC"), (["B-ORG"], None),
     (["B-PER", "O", "B-LOC"], None), (["B-LOC", "B-LOC"], None), (["I-LOC", "I-LOC"], "LOC"), (["O"], None)],
)
def test_ner_needs_exactly_one_per_or_loc_span(tags, expected):
    assert ner_label(tags)[0] == expected


@pytest.mark.parametrize(
    "text,expected",
    [("The cat", "exactly_once"), ("the THE tHe", "more_than_once"), ("they went there", None),
     ("#the best", "exactly_once"), ("other", None), ("the's the", "more_than_once")],
)
def test_occurrence_counts_standalone_the(text, expected):
    assert occurrence_label(text)[0] == expected


# ----------------------------------------------------------------- counts of the README


@needs_raw
def test_math_counts(tasks):
    out = load(tasks["math"])
    assert out.read == 8792
    assert Counter(r.label for r in out.rows) == {"even_number": 6149, "odd_number": 2643}


@needs_raw
def test_ner_counts(tasks):
    out = load(tasks["ner"])
    assert out.read == 30000
    assert Counter(r.label for r in out.rows) == {"PER": 7593, "LOC": 7092}
    assert sum(out.dropped.values()) == 15315


@needs_raw
def test_occurrence_counts_all_subsets_and_missing_train(tasks):
    out = load(tasks["occurrence"])
    assert out.read == 155170
    assert Counter(r.label for r in out.rows) == {"exactly_once": 36753, "more_than_once": 11013}
    assert out.dropped['no standalone "the"'] + out.dropped["empty text"] == 107404
    assert any("sentiment/train_text.txt" in n for n in out.notes)
    assert any("pooled in" in n for n in out.notes)


@needs_raw
def test_occurrence_sentiment_subset_alone(tasks):
    cfg = replace(tasks["occurrence"], source=replace(tasks["occurrence"].source, fallback_subsets=[]))
    out = load(cfg)
    assert Counter(r.label for r in out.rows) == {"exactly_once": 4189, "more_than_once": 1466}


@needs_raw
def test_sentiment_counts_and_two_label_texts(tasks):
    out = load(tasks["sentiment"])
    assert out.read == 68221
    assert Counter(r.label for r in out.rows) == {"negative": 30208, "positive": 38013}
    dropped = Counter()
    kept = deduplicate(out.rows, dropped)
    assert dropped == {"duplicate text": 366, "text with two labels": 10}  # 371 repeats, 5 with both labels
    assert not any(r.text.endswith(" ") for r in kept)


@needs_raw
def test_wsd_counts(tasks):
    out = load(tasks["wsd"])
    assert Counter(r.label for r in out.rows) == {"place": 3821, "programming_language": 2612}
    assert any("decimal arithmetic decimal arithmetic" in r.text for r in out.rows)


@needs_raw
@pytest.mark.parametrize("task", ["math", "ner", "sentiment", "wsd"])
def test_paper_appendix_a_examples_are_found(tasks, task):
    example = {"math": "Jill likes to do small jobs online.", "ner": "Dirk Nowitzki ( 7 )",
               "sentiment": "understated piece of filmmaking", "wsd": "the colonial authorities"}[task]
    assert any(r.text.startswith(example) for r in load(tasks[task]).rows)


# ----------------------------------------------------------------- pools


@needs_raw
def test_pools_sample_half_per_label_hash_and_cache(tasks, tmp_path):
    pool = build_pool(tasks["math"], RAW, tmp_path)
    assert pool.meta.sampled == {"even_number": 2500, "odd_number": 2500}
    assert len({x.id for x in pool.instances}) == 5000
    assert not pool.meta.filtered and "unfiltered" in pool.summary()
    cached = list((tmp_path / "pools" / "math").glob("*.json"))
    assert len(cached) == 1
    again = build_pool(tasks["math"], RAW, tmp_path)
    assert again.version == pool.version and again.instances == pool.instances
    other_seed = build_pool(replace(tasks["math"], pool_seed=1), RAW, tmp_path)
    assert other_seed.version != pool.version


@needs_raw
def test_sentiment_pool_has_ten_thousand(tasks):
    assert build_pool(tasks["sentiment"], RAW, None).meta.sampled == {"negative": 5000, "positive": 5000}


@needs_raw
def test_occurrence_pool_records_the_fallback(tasks):
    pool = build_pool(tasks["occurrence"], RAW, None)
    assert pool.meta.sampled == {"more_than_once": 2500, "exactly_once": 2500}
    assert any("pooled in" in n for n in pool.meta.notes)
    assert {x.id.split("/")[0] for x in pool.instances} > {"sentiment"}


def test_a_corrupted_cache_file_is_rebuilt(tmp_path):
    cfg = compose("task=arith").task["arith"]
    pool = build_pool(cfg, None, tmp_path)
    (cached,) = (tmp_path / "pools" / "arith").glob("*.json")
    cached.write_text("{ broken")
    assert build_pool(cfg, None, tmp_path).version == pool.version


def test_short_label_keeps_all_and_says_so():
    cfg = compose("task=arith").task["arith"]
    rows = [Row(f"r{i}", f"text {i}", "even_number") for i in range(10)] + [Row("x", "odd one", "odd_number")]
    pool = sample_pool(replace(cfg, pool_size=8), LoadResult(rows=rows, read=11, source="test"))
    assert pool.meta.sampled == {"even_number": 4, "odd_number": 1}
    assert any("only 1 of the 4" in n for n in pool.meta.notes)


def test_missing_local_files_are_named(tmp_path, tasks):
    with pytest.raises(DataError, match=r"math/train.jsonl.*math/test.jsonl"):
        build_pool(tasks["math"], tmp_path, None)
    with pytest.raises(DataError, match="not a folder"):
        build_pool(tasks["math"], tmp_path / "nope", None)


def test_wsd_without_local_files_says_where_to_get_them(tasks):
    with pytest.raises(DataError, match="no canonical copy on the Hugging Face hub.*data_dir"):
        build_pool(tasks["wsd"], None, None)


def test_hub_offline_gives_advice(tasks, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="data_dir="):
        build_pool(tasks["sentiment"], None, None)


def test_malformed_rows_are_skipped_and_counted(tmp_path, tasks):
    folder = tmp_path / "math"
    folder.mkdir()
    good = json.dumps({"question": "Two plus two?", "answer": "#### 4"})
    (folder / "train.jsonl").write_text("\n".join([good, "{not json", json.dumps({"question": "q"}),
                                                   json.dumps({"question": "x?", "answer": "none"})]) + "\n")
    (folder / "test.jsonl").write_bytes(json.dumps({"question": "Odd \xff?", "answer": "#### 3"}).encode() + b"\n\xff\xfe\n")
    out = load(tasks["math"], tmp_path)
    assert [r.label for r in out.rows] == ["even_number", "odd_number"]
    assert out.dropped["malformed row"] == 3
    assert out.dropped["no '####' final answer"] == 1


# ----------------------------------------------------------------- a user's own table


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_user_table_task_needs_only_a_config_file(tmp_path, suffix, monkeypatch):
    frame = pd.DataFrame({"text": [f"review {i}" for i in range(40)] + ["", "dup", "dup"],
                          "label": [i % 2 for i in range(40)] + [1, 0, 0]})
    path = tmp_path / f"reviews.{suffix}"
    {"csv": lambda: frame.to_csv(path, index=False), "jsonl": lambda: frame.to_json(path, orient="records", lines=True),
     "parquet": lambda: frame.to_parquet(path)}[suffix]()
    monkeypatch.setenv("MIP_EXAMPLE_TABLE", str(path))
    cfg = compose("task=example_reviews").task["example_reviews"]
    pool = build_pool(cfg, None, tmp_path / "cache")
    assert pool.meta.sampled == {"negative": 21, "positive": 20}
    assert pool.meta.dropped == {"duplicate text": 1, "empty text": 1}


def test_user_table_with_a_missing_column_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    pd.DataFrame({"body": ["a"], "label": [0]}).to_csv(path, index=False)
    monkeypatch.setenv("MIP_EXAMPLE_TABLE", str(path))
    cfg = compose("task=example_reviews").task["example_reviews"]
    with pytest.raises(DataError, match="no column 'text'"):
        build_pool(cfg, None, None)


def test_synthetic_task_is_seeded_and_labelled_by_parity():
    cfg = compose("task=arith").task["arith"]
    a, b = build_pool(cfg, None, None), build_pool(cfg, None, None)
    assert a.version == b.version
    for x in a.instances[:50]:
        expr = x.text.removeprefix("What is ").removesuffix("?").replace("×", "*")
        assert (eval(expr) % 2 == 0) == (x.label == "even_number")


# ----------------------------------------------------------------- hub copies (schema injected at the boundary)

HUB_ROWS = {
    ("openai/gsm8k", "main"): [{"question": "Two apples and two more?", "answer": "2+2=4\n#### 4"},
                               {"question": "Three?", "answer": "#### 1,003"}],
    ("unimelb-nlp/wikiann", "en"): [{"tokens": ["Dirk", "Nowitzki", "(", "7", ")"], "ner_tags": [1, 2, 0, 0, 0]},
                                    {"tokens": ["Liberty", "Township"], "ner_tags": [5, 6]},
                                    {"tokens": ["IBM"], "ner_tags": [3]}],
    ("cardiffnlp/tweet_eval", "sentiment"): [{"text": "the cat and the dog", "label": 2}, {"text": "The end", "label": 0},
                                             {"text": "no article", "label": 1}],
    ("stanfordnlp/sst2", None): [{"sentence": "crude and unrelentingly exploitative ", "label": 0},
                                 {"sentence": "understated piece of filmmaking", "label": 1}],
}


@pytest.fixture
def fake_hub(monkeypatch):
    calls = []

    def rows(path, name, split):
        calls.append((path, name, split))
        return HUB_ROWS.get((path, name), []) if split == "train" else []

    monkeypatch.setattr("mip.data.sources.hub.rows", rows)
    return calls


@pytest.mark.parametrize(
    "task,expected",
    [("math", ["even_number", "odd_number"]), ("ner", ["PER", "LOC"]),
     ("occurrence", ["more_than_once", "exactly_once"]), ("sentiment", ["negative", "positive"])],
)
def test_hub_loaders_apply_the_same_label_rules(tasks, fake_hub, task, expected):
    out = load(tasks[task], None)
    assert [r.label for r in out.rows] == expected
    assert out.source.startswith("hub:")
    assert {split for _, _, split in fake_hub} == set(tasks[task].source.hub_splits)


def _reviews(folder):
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"text": [f"review {i}" for i in range(20)], "label": [i % 2 for i in range(20)]}).to_csv(
        folder / "rel.csv", index=False)


def test_a_relative_table_path_is_read_from_data_dir_whatever_the_shells_folder(tmp_path, monkeypatch):
    _reviews(tmp_path / "data")
    monkeypatch.setenv("MIP_EXAMPLE_TABLE", "rel.csv")
    monkeypatch.chdir(tmp_path)  # a rel.csv here must not be what is read
    pd.DataFrame({"text": ["x"], "label": [0]}).to_csv(tmp_path / "rel.csv", index=False)
    cfg = compose("task=example_reviews").task["example_reviews"]
    pool = build_pool(cfg, tmp_path / "data", None)
    assert sum(pool.meta.sampled.values()) == 20


def test_a_relative_table_path_without_data_dir_is_read_from_the_repository(tmp_path, monkeypatch):
    from mip.data.sources import REPO_ROOT, table_path

    assert REPO_ROOT == REPO and table_path("t.csv", None) == REPO / "t.csv"
    assert table_path("t.csv", tmp_path) == tmp_path / "t.csv" and table_path(str(tmp_path / "a.csv"), None) == tmp_path / "a.csv"
    monkeypatch.setenv("MIP_EXAMPLE_TABLE", "no-such-table.csv")
    monkeypatch.chdir(tmp_path)
    _reviews(tmp_path)
    (tmp_path / "rel.csv").rename(tmp_path / "no-such-table.csv")  # in the shell's folder: not read
    cfg = compose("task=example_reviews").task["example_reviews"]
    with pytest.raises(DataError, match="read from the repository folder"):
        build_pool(cfg, None, None)
