"""report.html beyond the core: the interval tables, the generalisability cells, the strategies
and their comparison with the single call, the expanded orderings, the pool comparison, Table 7
and the prompt-variant Δs link every number to the list of experiments it was computed from,
and each list holds exactly as many as the table says.

Built from a synthetic frame (no job runs): the browser and the record pages are
test_html_report.py's.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from mip.analysis import stats
from mip.analysis.report import write_report

from .test_analyze import _frame
from .test_stats import cell

C, I, X = "correct", "incorrect", "invalid"


def _rows() -> list[dict]:
    rows = []
    for seed in (0, 1, 2):
        for n in (20, 40):  # the generalisability grid: two (n, p) cells
            rows += cell(seed, "majority_first", [C, C, C, X], n=n)
            rows += cell(seed, "majority_middle", [I, C, I, I], n=n)
        # The core cell alone holds task t4: matched away from the grid, not from the core.
        rows += cell(seed, "majority_first", [C] * 5, n=20)[4:]
        for strategy in ("decomposed",):  # a strategy beside its single-call twins (tasks t0–t2)
            rows += cell(seed, "majority_first", [C, I, C], strategy=strategy, model=f"M [{strategy}]", base_model="M",
                         calls=3, count_error_majority=-1, instance_accuracy=0.9, missing_share=0.1)
            rows += cell(seed, "majority_middle", [I, I, C], strategy=strategy, model=f"M [{strategy}]", base_model="M",
                         calls=3, count_error_majority=-2, instance_accuracy=0.8, missing_share=0.2)
        rows += cell(seed, "majority_first", [C, C], shuffle_seed=seed + 4)  # expanded orderings
        rows += cell(seed, "majority_middle", [I, C], shuffle_seed=seed + 4)
    return [{**r, "key": f"k{i:03d}"} for i, r in enumerate(rows)]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    from mip.analysis.report import figures

    folder = tmp_path_factory.mktemp("links") / "report"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save", __import__("tests.conftest", fromlist=["unencoded"]).unencoded)
        write_report(_frame(_rows()), folder, core=(20, 0.6))
    return folder


def _table(report: Path, name: str) -> tuple[list[str], list[list[tuple[str, str | None]]]]:
    """A report.html table's header and rows, each cell as (text, href or None)."""
    text = (report / "report.html").read_text(encoding="utf-8")
    body = text[text.index(f'id="t-{name}"'):]
    body = body[:body.index("</table>")]
    head = [unescape(h) for h in re.findall(r"<th>(.*?)</th>", body)]
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", body)[1:]:
        cells = []
        for td in re.findall(r"<td>(.*?)</td>", tr):
            link = re.fullmatch(r'<a href="([^"]+)">(.*)</a>', td)
            cells.append((unescape(link.group(2)), link.group(1)) if link else (unescape(td), None))
        rows.append(cells)
    return head, rows


def _listed(report: Path, href: str) -> pd.DataFrame:
    """The experiments a list page holds: key, pattern, seed, task."""
    page = (report / href.split("#")[0]).read_text(encoding="utf-8")
    found = re.findall(r'<tr data-key="(\w+)" data-verdict="(\w*)" data-pattern="(\w+)" data-task="(\w+)" '
                       r'data-seed="(\w+)"', page)
    return pd.DataFrame(found, columns=["key", "verdict", "pattern", "task", "seed"])


def _check(report: Path, name: str, key: list[str], linked: list[str], count: str | None = "experiments",
           frame: pd.DataFrame | None = None) -> list[dict]:
    """Every cell of ``linked`` links; cells of one row share one list whose length is ``count``'s
    number; returns each row's values and list."""
    head, rows = _table(report, name)
    assert rows, name
    out = []
    for cells in rows:
        row = dict(zip(head, cells))
        hrefs = {row[c][1] for c in linked}
        assert None not in hrefs and len(hrefs) == 1, (name, row)
        listed = _listed(report, hrefs.pop())
        if count is not None:
            assert len(listed) == int(float(row[count][0])) > 0, (name, row)
        if frame is not None:  # exactly the experiments of the row's key
            want = frame
            for c in key:
                want = want[want[c].astype(str) == row[c][0]]
            assert sorted(listed["key"]) == sorted(want["key"]), (name, row)
        out.append({**{c: v for c, (v, _) in row.items()}, "list": listed, "href": row[linked[0]][1]})
    return out


def test_generalisability_cells_link_the_matched_experiments_of_each_cell(report):
    every = _frame(_rows())
    name = next(p.stem for p in (report / "tables").glob("generalisability_cells_*.csv"))
    rows = _check(report, name, ["model", "pattern", "n", "p"], ["acc_mean", "acc_sd", "seeds", "valid", "experiments"])
    assert {(r["pattern"], r["n"]) for r in rows} == {(p, n) for p in ("majority_first", "majority_middle") for n in ("20", "40")}
    for r in rows:  # three seeds × tasks t0–t3: the core cell's t4 is matched away, as the table counts it
        assert r["experiments"] == "12" and set(r["list"]["task"]) == {"t0", "t1", "t2", "t3"}
        core = every[(every["strategy"] == "single_call") & every["shuffle_seed"].isna() & (every["n"] == int(r["n"]))
                     & (every["pattern"] == r["pattern"])]
        assert len(core) == (15 if r["n"] == "20" and r["pattern"] == "majority_first" else 12)


def test_interval_tables_link_the_experiments_of_each_interval_and_test(report):
    head, rows = _table(report, "intervals_and_tests_n20_p0.6")
    frame = _frame(_rows())
    core = frame[(frame["n"] == 20) & (frame["strategy"] == "single_call") & frame["shuffle_seed"].isna()]
    for cells in rows:
        row = dict(zip(head, cells))
        assert None not in {row[c][1] for c in ("sets", "acc_ci_low", "acc_ci_high", "delta_ci_low", "delta_ci_high",
                                                 "test", "pairs", "p_value")}, row
        everything = _listed(report, row["sets"][1])
        assert sorted(everything["key"]) == sorted(core["key"]) and row["acc_ci_high"][1] == row["sets"][1]
        sets = everything.merge(core[["key", "valid"]]).query("valid")[["seed", "task"]].drop_duplicates()
        assert len(sets) == int(row["sets"][0]) == 15  # instance sets with a valid experiment
        delta = _listed(report, row["delta_ci_low"][1])
        # What the Δ interval resamples: π⁺ and π⁻ in the instance sets both hold; t4 (majority_first only) is not.
        assert set(delta["pattern"]) == {"majority_first", "majority_middle"} and len(delta) == 24
        assert "t4" not in set(delta["task"])
        pairs = _listed(report, row["pairs"][1])
        assert row["test"][1] == row["p_value"][1] == row["pairs"][1]
        # t3 of majority_first is invalid in every seed: 3 seeds × t0–t2 pairs, two experiments each.
        assert int(row["pairs"][0]) == len(pairs[["seed", "task"]].drop_duplicates()) == 9 and len(pairs) == 18
        assert set(pairs["verdict"]) <= {"correct", "incorrect"}


def test_strategy_tables_link_the_experiments_matched_with_the_single_call(report):
    frame = _frame(_rows())
    (row,) = _check(report, "strategies", [], ["experiments", "valid", "sets", "acc", "acc_all"])
    assert row["model"] == "M [decomposed]" and set(row["list"]["task"]) == {"t0", "t1", "t2"}
    head, rows = _table(report, "strategies")
    delta = _listed(report, dict(zip(head, rows[0]))["delta"][1])  # Δ: π⁺ and π⁻ in their paired seeds
    assert len(delta) == len(row["list"]) == 18 and set(delta["seed"]) == {"0", "1", "2"}
    cost = _check(report, "cost_and_tokens", ["model"], ["experiments", "calls per experiment", "total cost (USD)"],
                  frame=None)
    by_model = {r["model"]: r["list"] for r in cost}
    # The single call's row holds only its twins of the strategy's experiments (tasks t0–t2 at the core cell).
    single = by_model["M"]
    assert len(single) == 18 and set(single["task"]) == {"t0", "t1", "t2"}
    keys = frame[(frame["model"] == "M") & (frame["n"] == 20) & frame["shuffle_seed"].isna()
                 & frame["task"].isin(["t0", "t1", "t2"])]["key"]
    assert sorted(single["key"]) == sorted(keys)
    errors = _check(report, "count_errors", ["model", "pattern"], ["experiments", "mean error", "mean |error|"])
    assert sorted(len(r["list"]) for r in errors) == [9, 9]
    assert {r["pattern"]: set(r["list"]["pattern"]) for r in errors} == {p: {p} for p in ("majority_first", "majority_middle")}
    _check(report, "decomposed_instances", ["model", "pattern"], ["experiments", "instance accuracy", "missing share"])


def test_expanded_orderings_link_their_experiments(report):
    frame = _frame(_rows())
    shuffled = frame[frame["shuffle_seed"].notna()]
    (row,) = _check(report, "expanded_orderings", [], ["experiments", "acc", "acc_all"])
    assert sorted(row["list"]["key"]) == sorted(shuffled["key"])
    head, rows = _table(report, "expanded_orderings")
    delta = _listed(report, dict(zip(head, rows[0]))["delta"][1])  # Δ: π⁺ and π⁻ in their paired seeds
    assert len(delta) == len(shuffled) and set(delta["pattern"]) == {"majority_first", "majority_middle"}
    patterns = _check(report, "expanded_orderings_patterns", ["pattern"], ["acc_mean", "acc_sd", "seeds", "valid", "experiments"],
                      frame=shuffled)
    assert sorted(len(r["list"]) for r in patterns) == [6, 6]


def test_an_unlinked_table_keeps_plain_cells(report):
    """The reference calculation is no function of the records: nothing in it links."""
    _, rows = _table(report, "reference_c4")
    assert rows and all(href is None for cells in rows for _, href in cells)
    assert stats.METRICS  # the accuracies the tables link are the paper's two


def _compared_rows() -> list[dict]:
    """One model at the core cell: 20k and 100k (seeds 0, 1 at 100k), the filtered pool at 20k
    (seeds 0, 1) and the hint variant at 20k (tasks t0–t2): each comparison drops what the other
    condition lacks."""
    rows = []
    for seed in (0, 1, 2):
        kw = {"pool_filtered": False, "reasoning": "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"}
        rows += cell(seed, "majority_first", [C, C, X, I], **kw) + cell(seed, "majority_middle", [I, C, I, C])
        rows += cell(seed, "majority_first", [C, I, C], prompt_variant="hint") + cell(seed, "majority_middle", [C, C, I],
                                                                                      prompt_variant="hint")
        if seed < 2:
            rows += cell(seed, "majority_first", [C, X, C, C], budget="100k", **kw)
            rows += cell(seed, "majority_middle", [I, I, C, C], budget="100k")
            rows += cell(seed, "majority_first", [C, C, C], pool_filtered=True) + cell(seed, "majority_middle", [C, I, I],
                                                                                      pool_filtered=True)
    return [{"pool_filtered": False, **r, "key": f"c{i:03d}"} for i, r in enumerate(rows)]


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    from mip.analysis.report import figures

    folder = tmp_path_factory.mktemp("compared") / "report"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save", __import__("tests.conftest", fromlist=["unencoded"]).unencoded)
        write_report(_frame(_compared_rows()), folder, core=(20, 0.6))
    return folder


def _side_by_side(report: Path, name: str, order: list[str]) -> dict[str, list[dict]]:
    """Every number of a side-by-side table links: each condition's column to the row's experiments
    under it (as many as its ``experiments`` row says), each change to those of both conditions."""
    head, rows = _table(report, name)
    assert head[:2] == ["model", "metric"] and head[2:] == [*order, *(f"{c} − {order[0]}" for c in order[1:])], head
    out: dict[str, list[dict]] = {}
    for cells in rows:
        row = dict(zip(head, cells))
        assert all(row[c][1] for c in head[2:]), (name, row)
        listed = {c: _listed(report, row[c][1]) for c in head[2:]}
        for c in order[1:]:
            assert sorted(listed[f"{c} − {order[0]}"]["key"]) == sorted([*listed[c]["key"], *listed[order[0]]["key"]])
        if row["metric"][0] == "experiments":
            assert all(len(listed[c]) == int(row[c][0]) > 0 for c in order), (name, row)
        out.setdefault(row["model"][0], []).append(listed)
    return out


def test_the_pool_comparison_links_each_pools_matched_experiments(compared):
    frame = _frame(_compared_rows())
    (lists,) = _side_by_side(compared, "pools_n20_p0.6", ["unfiltered", "filtered"]).values()
    assert len(lists) == 2 * len(stats.METRICS) + 2  # accuracies, Δs, invalid rate, experiments
    for pool in ("unfiltered", "filtered"):  # seed 2 and task t3 have no filtered twin: matched away
        want = frame[(frame["pool"] == pool) & (frame["budget"] == "20k") & (frame["prompt_variant"] == "standard")
                     & (frame["seed"] < 2) & (frame["task"] != "t3")]
        assert all(sorted(listed[pool]["key"]) == sorted(want["key"]) for listed in lists) and len(want) == 12


def test_table_7_links_each_coverage_bin_to_its_valid_experiments(compared):
    frame = _frame(_compared_rows())
    head, rows = _table(compared, "table7_coverage_by_budget_n20_p0.6_unfiltered")
    seen = {}
    for cells in rows:
        row = dict(zip(head, cells))
        hrefs = {row[c][1] for c in ("experiments", "share", "accuracy")}
        assert None not in hrefs and len(hrefs) == 1, row
        listed = _listed(compared, hrefs.pop())
        assert len(listed) == int(row["experiments"][0]) and set(listed["verdict"]) <= {"correct", "incorrect"}, row
        seen.setdefault(row["budget"][0], []).extend(listed["key"])
    assert {b for b in seen} == {"20k", "100k"} and any(int(dict(zip(head, r))["experiments"][0]) == 0 for r in rows)
    for budget, keys in seen.items():  # the bins add up to the budget's valid matched experiments (seeds 0, 1)
        want = frame[(frame["budget"] == budget) & (frame["pool"] == "unfiltered") & (frame["prompt_variant"] == "standard")
                     & frame["valid"] & (frame["seed"] < 2)]
        assert sorted(keys) == sorted(want["key"])


def test_prompt_variant_deltas_link_the_matched_pairs_of_variant_and_standard(compared):
    head, rows = _table(compared, "prompt_variant_deltas_n20_p0.6_unfiltered_20k")
    assert len(rows) == 3  # two patterns and overall
    for cells in rows:
        row = dict(zip(head, cells))
        hrefs = {row[c][1] for c in ("delta_mean", "delta_sd", "seeds", "matched")}
        assert None not in hrefs and len(hrefs) == 1, row
        listed = _listed(compared, hrefs.pop())
        assert len(listed) == 2 * int(row["matched"][0]) > 0, row  # each matched experiment with its standard twin
        assert set(listed["task"]) == {"t0", "t1", "t2"}  # t3: the hint variant never ran it
        patterns = {"majority_first", "majority_middle"} if row["pattern"][0] == "overall" else {row["pattern"][0]}
        assert set(listed["pattern"]) == patterns and set(listed["seed"]) == {"0", "1", "2"}
