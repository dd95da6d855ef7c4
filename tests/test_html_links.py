"""report.html beyond the core: the interval tables, the generalisability cells, the strategies
and their comparison with the single call, and the expanded orderings link every number to the
list of experiments it was computed from, and each list holds exactly as many as the table says.

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
        assert set(delta["pattern"]) == {"majority_first", "majority_middle"} and len(delta) == 27
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
