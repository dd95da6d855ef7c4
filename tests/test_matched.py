"""Comparisons on matched experiments only: a partial grid never compares different instance sets.

A planted first-k reader (a test instrument: mip/models/simulated.py) reads the first 9 instances
on arith and all 20 on NER, so its accuracy depends on the task, and it ignores the prompt variant
and the budget. Its core grid runs on both tasks; the prompt variants and the 100k budget on arith
only. Compared on the experiments both conditions hold, every variant delta and the 100k − 20k
delta are exactly 0, and the report counts what was left out; compared unmatched (the standard
prompt over two tasks against a variant over one) they are not.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from mip.analysis import pairs
from mip.analysis.report import write_report
from mip.analysis.results import load_local
from mip.job import run_job

from .conftest import RAW, compose, needs_raw, vary
from .test_tracking import wandb_env  # noqa: F401 - fixture

PATTERNS = ["random", "majority_first", "majority_last", "majority_edges", "majority_middle",
            "soft_majority_edges", "soft_majority_middle"]
SEEDS = (0, 1)
#: The reader's k per task: its accuracy differs between tasks, never between prompts or budgets.
READ_FIRST = {"arith": 9, "ner": 20}


def _jobs(tmp, task: str, variant: str = "standard", budget: str = "20k") -> None:
    base = compose("model=simulated_first_k", f"model.read_first={READ_FIRST[task]}", f"task={task}", "n=20", "p=0.6",
                   f"prompt_variant={variant}", f"budget={budget}", "progress=false", f"data_dir={RAW}",
                   f"paths.results_dir={tmp}", f"paths.cache_dir={tmp / 'cache'}")
    for pattern in PATTERNS:
        for seed in SEEDS:
            run_job(vary(base, pattern=pattern, seed=seed), tmp / "jobs" / f"{task}-{variant}-{budget}-{pattern}-{seed}")


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    """The core grid on arith and NER; +experiment=prompt_variants and +experiment=budgets on arith."""
    tmp = tmp_path_factory.mktemp("partial")
    for task in ("arith", "ner"):
        _jobs(tmp, task)
    for variant in ("hint", "strategy", "self_prompt"):
        _jobs(tmp, "arith", variant=variant)
    _jobs(tmp, "arith", budget="100k")
    return load_local([tmp / "store"])


@needs_raw
def test_the_unmatched_comparison_differs_where_the_matched_one_is_zero(partial):
    """What the report compared before: the standard prompt's per-seed accuracy over both tasks
    against a variant's over arith alone — a task effect read as a prompt effect."""
    single = partial[partial["budget"] == "20k"]
    acc = single.groupby(["prompt_variant", "seed"])["correct"].mean().unstack("prompt_variant")
    assert (acc["hint"] - acc["standard"]).abs().min() > 0.05
    matched = pairs.matched(single[single["prompt_variant"].isin(["standard", "hint"])], "prompt_variant")
    kept = matched.frame.groupby(["prompt_variant", "seed"])["correct"].mean().unstack("prompt_variant")
    assert (kept["hint"] - kept["standard"]).abs().max() == 0
    counts = matched.counts.set_index(["prompt_variant", "task"])
    assert counts.loc[("standard", "ner"), "dropped"] == counts.loc[("standard", "ner"), "held"] > 0
    assert counts.loc[("standard", "arith"), "dropped"] == 0 == counts.loc[("hint", "arith"), "dropped"]


@needs_raw
def test_variant_and_budget_deltas_are_zero_with_the_dropped_counted(partial, tmp_path, figures_unencoded):
    path = write_report(partial, tmp_path / "report", core=(20, 0.6))
    text = path.read_text()
    tables = tmp_path / "report" / "tables"
    deltas = pd.read_csv(tables / "prompt_variant_deltas_n20_p0.6_unfiltered_20k.csv")
    assert sorted(set(deltas["prompt_variant"])) == ["hint", "self_prompt", "strategy"]
    assert (deltas["delta_mean"] == 0).all() and len(deltas) == 3 * 8
    side = pd.read_csv(tables / "budgets_n20_p0.6_unfiltered.csv")
    assert side.columns[:2].tolist() == ["model", "metric"]
    assert list(side.columns).index("20k") < list(side.columns).index("100k")  # by value, not by name
    change = side.set_index("metric")["100k − 20k"]
    assert float(change.loc["valid-only accuracy"]) == 0 and float(change.loc["invalid rate"]) == 0
    # The dropped experiments are counted beside each comparison, per condition and task.
    assert "standard: 72 held, 36 matched, 36 dropped (ner 36)" in text
    assert "20k: 72 held, 36 matched, 36 dropped (ner 36)" in text
    assert "100k: 36 held, 36 matched, 0 dropped" in text
    # report.md's tied-pattern cells by short names, with the legend under the table (230 characters before).
    table5 = (tables / "table5_prompt_variants_n20_p0.6_unfiltered.md").read_text()
    assert "| first, edges, middle, s.edges, s.middle |" in table5 and "s.middle = soft_majority_middle" in table5
    # report.html's budget and variant cells open the matched experiments only (36 a condition), not the 72 held.
    html = (tmp_path / "report" / "report.html").read_text()
    for table in ("budgets_n20_p0.6_unfiltered", "budgets_numbers_n20_p0.6_unfiltered",
                  "table5_prompt_variants_n20_p0.6_unfiltered"):
        body = html[html.index(f'id="t-{table}"'):]
        body = body[:body.index("</table>")]
        links = set(re.findall(r'<a href="(lists/[^"]+)"', body))
        assert links, table
        keys = {link: set(re.findall(r'<tr data-key="(\w+)"', (tmp_path / "report" / link).read_text())) for link in links}
        change = [k for k in keys.values() if len(k) > 36]  # budgets_: a change opens both budgets' matched ones
        assert all(k == set().union(*(o for o in keys.values() if len(o) == 36 and o <= k)) for k in change), table
        # else a condition's experiments (36); a Δ's list holds its paired π⁺ and π⁻ only
        assert max(map(len, keys.values())) == (72 if table == "budgets_n20_p0.6_unfiltered" else 36), table


@needs_raw
def test_a_third_budget_on_a_few_experiments_leaves_the_others_comparison_whole(partial, tmp_path, figures_unencoded):
    """Each two budgets are compared on what both hold: one job at 999 tokens on arith does not
    shrink 20k against 100k to the experiments all three share (it was 2 of 36 before)."""
    base = compose("model=simulated_first_k", f"model.read_first={READ_FIRST['arith']}", "task=arith", "n=20", "p=0.6",
                   "budget=20k", "budget.max_tokens=999", "progress=false", f"data_dir={RAW}",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(vary(base, pattern="majority_last", seed=0), tmp_path / "jobs" / "999")
    frame = pd.concat([partial, load_local([tmp_path / "store"])], ignore_index=True)
    assert set(frame["budget"]) == {"20k", "100k", "999 tokens"}
    path = write_report(frame, tmp_path / "report", core=(20, 0.6))
    text, tables = path.read_text(), tmp_path / "report" / "tables"
    whole = pd.read_csv(tables / "budgets_numbers_n20_p0.6_unfiltered_20k_vs_100k.csv")
    assert whole.groupby("budget")["experiments"].sum().to_dict() == {"100k": 36, "20k": 36}
    assert "100k: 36 held, 36 matched, 0 dropped" in text
    few = pd.read_csv(tables / "budgets_numbers_n20_p0.6_unfiltered_999tokens_vs_20k.csv")
    assert few.groupby("budget")["experiments"].sum().to_dict() == {"20k": 2, "999 tokens": 2}  # one job: two majority labels
    assert not (tables / "budgets_n20_p0.6_unfiltered.csv").exists()  # three budgets: one table a pair


def test_a_budget_is_its_value_not_its_name(tmp_path):
    """``budget.max_tokens=999`` over smoke is a slice of its own; 20k set to smoke's 320 is smoke's slice."""
    for i, extra in enumerate([(), ("budget.max_tokens=999",)]):
        base = compose("model=simulated_first_k", "task=arith", "n=20", "p=0.6", "budget=smoke", *extra, "progress=false",
                       f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
        run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs" / str(i))
    base = compose("model=simulated_first_k", "task=arith", "n=20", "p=0.6", "budget=20k", "budget.max_tokens=320",
                   "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(vary(base, pattern="majority_first", seed=1), tmp_path / "jobs" / "2")
    frame = load_local([tmp_path / "store"])
    # smoke states 320 (its config's stated_tokens): 999 is its number, 20k at 320 is smoke's slice.
    assert frame.groupby("budget")["seed"].apply(sorted).to_dict() == {"smoke": [0, 0, 1, 1], "999 tokens": [0, 0]}
    assert sorted(set(zip(frame["budget_name"], frame["budget_tokens"]))) == [("20k", 320), ("smoke", 320), ("smoke", 999)]
    alone = frame[frame["budget_tokens"] == 320].drop(columns="budget")
    from mip.config.budgets import labels

    assert set(labels(alone["budget_name"].tolist(), alone["budget_tokens"].tolist())) == {"smoke"}


def test_wandb_tables_slice_budgets_by_value_as_the_store_does(tmp_path, wandb_env):  # noqa: F811
    """The W&B table carries each record's limits: smoke at 999 alone reads "999 tokens" from the
    offline runs too, never "smoke", and every record has the store's label."""
    from mip.analysis.results import load_wandb_offline

    base = compose("model=simulated_first_k", "task=arith", "n=20", "p=0.6", "budget=smoke", "budget.max_tokens=999",
                   "logger=wandb", "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs" / "0")
    local, remote = load_local([tmp_path / "store"]), load_wandb_offline([tmp_path / "jobs"])
    assert set(remote["budget"]) == {"999 tokens"} and set(remote["budget_tokens"]) == {999}
    assert dict(zip(local["key"], local["budget"])) == dict(zip(remote["key"], remote["budget"]))


def test_a_named_budget_run_only_at_another_value_is_labelled_by_that_value(tmp_path):
    """``budget.max_tokens=999`` over smoke with no record at smoke's 320 is still "999 tokens", never "smoke"."""
    base = compose("model=simulated_first_k", "task=arith", "n=20", "p=0.6", "budget=smoke", "budget.max_tokens=999",
                   "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs")
    frame = load_local([tmp_path / "store"])
    assert set(frame["budget"]) == {"999 tokens"}
    assert set(frame["budget_name"]) == {"smoke"}  # the name the config kept; its stated_tokens (320) says 999 is not smoke's
    from mip.config.budgets import labels

    assert labels(["smoke", "mine", "mine"], [999, 50, 50], stated=[320, None, None]) == ["999 tokens", "mine", "mine"]
    assert labels(["smoke"], [999]) == ["smoke"]  # a record that does not say what its name stood for keeps it


def test_a_filtered_pool_is_compared_with_the_unfiltered_on_matched_experiments(tmp_path, figures_unencoded):
    from mip.analysis import slices

    from .test_stats import cell, frame

    rows = [r for seed in (0, 1) for r in cell(seed, "majority_first", ["correct", "incorrect"], pool_filtered=False)]
    rows += cell(0, "majority_first", ["correct", "incorrect"], pool_filtered=True)  # seed 0 only, same tasks
    text = write_report(slices.add_columns(frame(rows)), tmp_path / "report", core=(20, 0.6)).read_text()
    table = pd.read_csv(tmp_path / "report" / "tables" / "pools_n20_p0.6.csv").set_index("metric")
    assert float(table.loc["valid-only accuracy", "filtered − unfiltered"]) == 0
    assert "unfiltered: 4 held, 2 matched, 2 dropped (t0 1, t1 1); filtered: 2 held, 2 matched, 0 dropped" in text


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """Patterns on different task and seed sets: every pattern on arith (selection seeds 0, 1),
    majority_last also on NER, majority_first also on arith with seed 2."""
    tmp = tmp_path_factory.mktemp("uneven")
    _jobs(tmp, "arith")
    for task, pattern, seed in [("ner", "majority_last", 0), ("ner", "majority_last", 1), ("arith", "majority_first", 2)]:
        base = compose("model=simulated_first_k", f"model.read_first={READ_FIRST[task]}", f"task={task}", "n=20", "p=0.6",
                       "budget=20k", "progress=false", f"data_dir={RAW}", f"paths.results_dir={tmp}",
                       f"paths.cache_dir={tmp / 'cache'}")
        run_job(vary(base, pattern=pattern, seed=seed), tmp / "jobs" / f"{task}-{pattern}-{seed}")
    return load_local([tmp / "store"])


@needs_raw
def test_pattern_delta_compares_matched_experiments_only(uneven, tmp_path, figures_unencoded):
    """Δ between patterns within one slice: the first-9 reader on arith answers majority_first
    always right and majority_last always wrong (Δ = 1, the closed form); on NER it reads all 20
    and is always right. Paired by seed alone, majority_last's NER experiments pull its accuracy to
    ½ and Δ to ½; matched, they are dropped and counted, and Δ, its list and its test rest on arith.
    (NER's reader reads 20, a changed setting: its records are a slice of their own in the report.)"""
    from mip.analysis import inference, stats

    from .planted import expected

    closed = expected(20, 0.6, first=READ_FIRST["arith"])
    assert closed["patterns"]["majority_first"] == 1 and closed["patterns"]["majority_last"] == 0
    # What pairing by seed alone gave: majority_last at ½ per seed (0 on arith, 1 on NER).
    by_seed = uneven[uneven["pattern"] == "majority_last"].groupby("seed")["correct"].mean()
    assert by_seed.tolist() == [0.5, 0.5]
    gap = stats.best_worst_gap(uneven)
    assert gap.delta == closed["delta"] == 1 and gap.seeds == (0, 1)
    assert set(gap.best_tied) == closed["best"] and set(gap.worst_tied) == closed["worst"]
    paired = gap.paired()
    assert set(paired["task"]) == {"arith"} and set(paired["seed"]) == {0, 1}
    ner = int((uneven["task"] == "ner").sum())
    seed2 = int((uneven["seed"] == 2).sum())
    assert ner > 0 and seed2 > 0 and gap.dropped() == ner + seed2
    counts = gap.compared.counts.set_index(["pattern", "task"])
    assert counts.loc[("majority_last", "ner"), "dropped"] == ner
    assert counts.loc[("majority_first", "arith"), "dropped"] == seed2
    # NER ran with read_first=20, a setting of its own: in the tables a slice of its own, never pooled.
    assert set(uneven["model"]) == {"simulated_first_k", "simulated_first_k [read_first=20]"}
    arith = int((uneven["task"] == "arith").sum())
    row = stats.model_table(uneven).set_index("model").loc["simulated_first_k"]
    assert row["delta"] == 1 and row["patterns_dropped"] == seed2
    assert row["patterns_matched"] == arith - seed2
    # The paired test pairs matched experiments: none of NER's or seed 2's.
    test = inference.paired_test(uneven, gap.best, gap.worst)
    assert test.pairs == int(((uneven["pattern"] == gap.best) & (uneven["task"] == "arith") & (uneven["seed"] < 2)).sum())
    # The report: Table 2's Δ, the numbers, the intervals' pairs, the dropped counted, the Δ list.
    text = write_report(uneven, tmp_path / "report", core=(20, 0.6)).read_text()
    tables = tmp_path / "report" / "tables"
    numbers = pd.read_csv(next(tables.glob("table2_numbers_*.csv"))).set_index("model").loc["simulated_first_k"]
    assert numbers["delta"] == 1 and numbers["patterns_dropped"] == seed2
    assert f"{seed2} unmatched experiments not in Δ" in numbers["rests on"]
    intervals = pd.read_csv(next(tables.glob("intervals_and_tests_*.csv"))).set_index("model").loc["simulated_first_k"]
    assert intervals["pairs"] == test.pairs
    held = int(((uneven["pattern"] == "majority_first") & (uneven["task"] == "arith")).sum())
    assert f"majority_first: {held} held, {held - seed2} matched, {seed2} dropped (arith {seed2})" in text
    html = (tmp_path / "report" / "report.html").read_text()
    body = html[html.index('id="t-table2_n20_p0.6"'):]
    body = body[:body.index("</table>")]
    links = re.findall(r'<a href="(lists/[^"]+)"[^>]*>[^<]*</a>', body)
    lists = {link: (tmp_path / "report" / link).read_text() for link in set(links)}
    delta = [page for page in lists.values() if "Δ = " in page]
    assert delta and all(len(re.findall(r"<tr data-key=", page)) == len(paired) for page in delta)


def test_summary_and_costs_slice_a_budget_by_its_value(tmp_path):
    """``python -m mip.summary``: the verdict tables and the cost lines both split smoke at 320
    from ``budget.max_tokens=999``, labelled as analyze.py labels them; a budget named 20k set to
    320 is smoke's slice (one value, one slice)."""
    from mip.tools.run_summary import describe

    runs = [("smoke", (), 0), ("smoke", ("budget.max_tokens=999",), 0), ("20k", ("budget.max_tokens=320",), 1)]
    for i, (budget, extra, seed) in enumerate(runs):
        base = compose("model=simulated_first_k", "task=arith", "n=20", "p=0.6", f"budget={budget}", *extra,
                       "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
        run_job(vary(base, pattern="majority_first", seed=seed), tmp_path / "jobs" / str(i))
    text = describe(tmp_path / "jobs")
    costs = [line for line in text.splitlines() if line.startswith("  simulated_first_k budget=")]
    assert [line.split(":")[0] for line in costs] == [
        "  simulated_first_k budget=smoke prompt_variant=standard strategy=single_call",
        "  simulated_first_k budget=999 tokens prompt_variant=standard strategy=single_call"]
    assert "4 experiments" in costs[0] and "2 experiments" in costs[1]
    slices = [line for line in text.splitlines() if line.startswith("-- slice:")]
    assert len(slices) == 2 and {"budget=smoke" in s for s in slices} == {True, False} \
        and sum("budget=999 tokens" in s for s in slices) == 1
    # A manifest written before it held the limits reads them from its config.yaml beside it.
    import json

    for manifest in (tmp_path / "jobs").rglob("job.json"):
        job = json.loads(manifest.read_text())
        del job["budget_tokens"], job["budget_answer"]
        manifest.write_text(json.dumps(job))
    assert describe(tmp_path / "jobs").splitlines()[1:3] == text.splitlines()[1:3]


def test_a_budget_given_as_a_number_names_files_and_anchors_without_spaces(tmp_path, figures_unencoded):
    """report.md's image links and report.html's ids and links hold no space where a budget is "999 tokens"."""
    base = compose("model=simulated_first_k", "task=arith", "n=20", "p=0.6", "budget=smoke", "budget.max_tokens=999",
                   "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    for pattern in ("majority_first", "majority_last"):
        run_job(vary(base, pattern=pattern, seed=0), tmp_path / "jobs" / pattern)
    frame = load_local([tmp_path / "store"])
    path = write_report(frame, tmp_path / "report", core=(20, 0.6))
    names = [p.name for p in (tmp_path / "report").rglob("*") if p.is_file()]
    assert any("999tokens" in name for name in names) and not [name for name in names if " " in name]
    assert not re.findall(r"\]\([^)]* [^)]*\)", path.read_text())  # every Markdown link a single path
    html = (tmp_path / "report" / "report.html").read_text()
    assert not [ref for ref in re.findall(r'(?:href|src|id)="([^"]*)"', html) if " " in ref]
