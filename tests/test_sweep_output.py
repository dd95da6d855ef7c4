"""What a dry-run sweep prints fits a reader: a note every job would repeat
(why its prompt tokens are estimated) is said once a sweep, and a sweep of several models or
budgets gets one table of them side by side (rows model × budget: experiments, prompt tokens,
expected cost, ceiling, GPU-hours for a model run on one's own GPU)."""

from __future__ import annotations

import re

from .conftest import run_entry


def test_a_swept_model_and_budget_dry_run_says_each_note_once_and_compares_side_by_side(results):
    ran = run_entry("run.py", "-m", "model=gpt54_nano,qwen36_35b", "budget=20k,100k", "task=arith", "n=20",
                    "pattern=majority_first", "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    said = ran.stdout + ran.stderr
    jobs = [line for line in said.splitlines() if " would run " in line]
    assert len(jobs) == 4
    notes = [re.search(r"prompt tokens (.*?); \d+ would not fit", line).group(1) for line in jobs]
    repeated = [n for n in notes if "as above" not in n]
    assert len(repeated) == len(set(repeated)) == 2, notes  # each model's note once, then "(as above)"
    assert said.count("side by side (model × budget") == 1
    head = said.index("side by side (model × budget")
    table = [line.strip() for line in said[head:].splitlines()[1:7]]
    columns = [c.strip() for c in table[0].split("|")[1:-1]]
    assert columns == ["model", "budget", "experiments", "prompt tokens", "expected cost", "ceiling", "GPU-hours"]
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): [c.strip() for c in line.split("|")[3:-1]]
            for line in table[2:]}
    assert set(rows) == {("gpt54_nano", "20k"), ("gpt54_nano", "100k"), ("qwen36_35b", "20k"), ("qwen36_35b", "100k")}
    for budget in ("20k", "100k"):
        api, local = rows[("gpt54_nano", budget)], rows[("qwen36_35b", budget)]
        assert api[0] == local[0] == "2" and api[2].startswith("$") and api[3].startswith("$") and api[4] == "-"
        assert local[2] == "-" and re.fullmatch(r"[\d.]+ \(ceiling [\d.]+\)", local[4]), local
    assert float(rows[("gpt54_nano", "100k")][2][1:]) > float(rows[("gpt54_nano", "20k")][2][1:])


def test_a_dry_run_of_one_slice_has_no_side_by_side_table(results):
    ran = run_entry("run.py", "-m", "model=gpt54_nano", "task=arith", "n=20", "pattern=majority_first,majority_last",
                    "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "side by side" not in ran.stdout + ran.stderr
