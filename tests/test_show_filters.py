"""mip.show for reading a sweep, through `python -m mip.show`: rows that tell
experiments apart (seed, order seed, task, pattern, majority, verdict) and filters by them."""

from __future__ import annotations

import re

import pytest

from mip.store import iter_records

from .conftest import run_entry

SWEEP = ("-m", "model=simulated_first_k", "task=arith", "n=20", "p=0.6", "pattern=random,majority_last", "seed=0,1",
         "budget=smoke", "progress=false")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    results = tmp_path_factory.mktemp("show_filters") / "results"
    ran = run_entry("run.py", *SWEEP, env={"MIP_RESULTS_DIR": str(results)})
    assert ran.returncode == 0, ran.stderr[-2000:]
    [folder] = (results / "sweeps").glob("*/*")
    return folder, list(iter_records([results / "store"]))


def _rows(stdout: str) -> list[list[str]]:
    """The listing's rows (header first), split on runs of two or more spaces."""
    listing = stdout.split("\n\n")[0].splitlines()[1:]
    return [re.split(r"\s{2,}", line.strip()) for line in listing if line.startswith("  ")]


def test_the_listing_tells_every_experiment_apart(sweep):
    """Before: key, model/task, pattern, majority and verdict only, so the random pattern's rows of
    three order seeds and two selection seeds read as duplicates."""
    folder, records = sweep
    shown = run_entry("-m", "mip.show", str(folder))
    assert shown.returncode == 0, shown.stderr
    header, *rows = _rows(shown.stdout)
    assert header == ["key", "model/task", "seed", "pattern", "order", "majority", "verdict"]
    assert len(rows) == len(records) == 16  # random: 2 seeds x 3 order seeds x 2 labels; majority_last: 2 x 2
    assert len({tuple(row[1:6]) for row in rows}) == 16  # no two rows alike but for the key
    assert [row[3] for row in rows] == ["random"] * 12 + ["majority_last"] * 4  # App. C.3's order, then seeds
    assert {row[4] for row in rows if row[3] == "random"} == {"0", "1", "2"}


def test_filters_keep_the_records_asked_for(sweep):
    folder, records = sweep
    want = {r.key for r in records if r.experiment.pattern == "majority_last" and r.experiment.seed == 1
            and r.verdict == "incorrect" and r.experiment.task == "arith"}
    assert want, "the planted first-k reader answers some majority_last sets wrongly"
    shown = run_entry("-m", "mip.show", str(folder), "verdict=incorrect", "pattern=majority_last", "task=arith", "seed=1")
    assert shown.returncode == 0, shown.stderr
    if len(want) > 1:
        assert shown.stdout.startswith(f"{len(want)} records of 16, with verdict=incorrect pattern=majority_last")
        assert {row[0] for row in _rows(shown.stdout)[1:]} == want
    else:
        assert f"== record {next(iter(want))}" in shown.stdout
    either = run_entry("-m", "mip.show", str(folder), "order_seed=0,2", "p=0.6")
    assert either.returncode == 0 and either.stdout.startswith("8 records of 16"), either.stdout[:200]


@pytest.mark.parametrize("words, said", [
    (("colour=red",), "unknown filter 'colour'; filter by budget"),
    (("task=ner",), "none of the 16 record(s)"),
])
def test_a_filter_that_keeps_nothing_or_is_unknown_is_one_line(sweep, words, said):
    folder, _ = sweep
    shown = run_entry("-m", "mip.show", str(folder), *words)
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1 and said in shown.stderr, shown.stderr
    if words == ("task=ner",):
        assert "task: arith" in shown.stderr
