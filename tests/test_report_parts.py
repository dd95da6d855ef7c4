"""A report's parts kept from one report to the next (mip.analysis.report.kept_parts): a rerun computes
again only the parts whose records changed, and what it keeps is exactly what a fresh report computes.

Counted, never timed: each test reads which parts a report computed (``Parts.computed``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from mip.analysis.report import figures, kept_figures, kept_parts, write_report

from .conftest import unencoded
from .test_analyze import _frame
from .test_html_links import _compared_rows, _rows
from .test_stats import C, I, cell

CORE = (20, 0.6)


def _stub(fig, folder: Path, name: str) -> list[Path]:
    """figures.save less the encoding: the files are there (a kept figure needs its files), not encoded."""
    paths = unencoded(fig, folder, name)
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        path.write_bytes(b"figure")
    return paths


@pytest.fixture
def computed(monkeypatch) -> list[list[str]]:
    """Per report written, the parts it computed (not kept from the last report), in order."""
    reports: list[list[str]] = []
    init = kept_parts.Parts.__init__

    def counting(self, *args, **kwargs):
        init(self, *args, **kwargs)
        reports.append(self.computed)

    monkeypatch.setattr(kept_parts.Parts, "__init__", counting)
    monkeypatch.setattr(figures, "save", _stub)
    return reports


def _files(report: Path) -> dict[str, bytes]:
    """Everything a reader sees of a report: report.md, report.html, its lists, tables, data and figures."""
    return {p.relative_to(report).as_posix(): p.read_bytes() for p in sorted(report.rglob("*"))
            if p.is_file() and not p.relative_to(report).as_posix().startswith((".", "records/"))}


def _same_as_fresh(frame: pd.DataFrame, report: Path, fresh: Path, **kw) -> None:
    write_report(frame, fresh, **kw)
    got, want = _files(report), _files(fresh)
    assert sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []


def _everything(*more: dict) -> pd.DataFrame:
    """Every section: the core cell at two budgets, two pools and a prompt variant, the (n, p) grid of
    two models (L's with traces), a strategy and the expanded orderings (three models, keys apart);
    ``more`` rows after them."""
    other = [{**r, "model": "N", "base_model": "N"} for r in _compared_rows()]
    rows = [r for s in (0, 1, 2) for n in (20, 40) for pattern in ("majority_first", "majority_middle")
            for r in cell(s, pattern, [C, I, C], n=n)]
    grid = [{**r, "model": "L", "base_model": "L", "reasoning": "Instances 1, 2 and 5 say so", "key": f"L{i}"}
            for i, r in enumerate(rows)]
    return _frame(_rows() + other + grid + [{**r, "key": f"new{i}"} for i, r in enumerate(more)])


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> tuple[Path, list[str]]:
    """A report of :func:`_everything` written afresh, and the parts it computed."""
    folder = tmp_path_factory.mktemp("parts") / "report"
    reports: list[list[str]] = []
    with pytest.MonkeyPatch.context() as patch:
        init = kept_parts.Parts.__init__
        patch.setattr(kept_parts.Parts, "__init__", lambda self, *a, **kw: init(self, *a, **kw) or
                      reports.append(self.computed))
        patch.setattr(figures, "save", _stub)
        write_report(_everything(), folder, core=CORE)
    return folder, reports[0]


def _last(first, tmp_path: Path) -> Path:
    """A copy of the first report, to write the next one over."""
    shutil.copytree(first[0], tmp_path / "report")
    return tmp_path / "report"


def test_a_rerun_of_the_same_records_computes_no_part_and_writes_the_same_report(tmp_path, first, computed):
    assert {"core: n20_p0.6", "budgets: n20_p0.6_unfiltered", "generalisability: 20k_unknown: cells",
            "generalisability: 20k_unknown: M", "generalisability: 20k_unknown: L",
            "generalisability: 20k_unknown: coverage of L", "prompt_variants: n20_p0.6_unfiltered",
            "strategies: every slice", "expanded: every slice"} <= set(first[1]), first[1]
    report = _last(first, tmp_path)
    write_report(_everything(), report, core=CORE)
    assert computed[-1] == []
    assert _files(report) == _files(first[0])


def test_one_more_job_computes_again_only_the_parts_its_records_reach(tmp_path, first, computed):
    """A new selection seed of model M at both cells of the grid: M's core cell, the grid's cells table
    and M's grids, M's strategy (matched with them), nothing else (not L's grids, nor L's coverage, nor a
    budget or variant); the report
    equals a fresh one of the same records, file for file."""
    grown = _everything(*(r for n in (20, 40) for r in cell(3, "majority_first", [C, I, C, C], n=n)
                          + cell(3, "majority_middle", [I, I, C, C], n=n)))
    report = _last(first, tmp_path)
    write_report(grown, report, core=CORE)
    assert computed[-1] == ["core: n20_p0.6", "generalisability: 20k_unknown: cells", "generalisability: 20k_unknown: M",
                            "strategies: every slice"]  # M's single calls are its strategy's baseline
    _same_as_fresh(grown, report, tmp_path / "fresh", core=CORE)


def test_a_record_changed_under_the_same_key_is_computed_again(tmp_path, first, computed):
    """The same key with another verdict (a record rewritten): its parts are computed again, and the
    report is a fresh one's; a changed trace counts as well."""
    frame = _everything()
    key = frame[(frame["model"] == "N") & (frame["budget"] == "100k")]["key"].iloc[0]
    was = frame.set_index("key").at[key, "verdict"]
    changed = frame.assign(verdict=frame["verdict"].mask(frame["key"] == key, I if was == C else C))
    changed["correct"], changed["valid"] = changed["verdict"] == C, changed["verdict"] != "invalid"
    report = _last(first, tmp_path)
    write_report(changed, report, core=CORE)
    assert computed[-1] == ["core: n20_p0.6", "budgets: n20_p0.6_unfiltered"]
    _same_as_fresh(changed, report, tmp_path / "fresh", core=CORE)
    traced = changed.assign(reasoning=[("1 2 3" if k == key else r) for k, r in zip(changed["key"],
                                                                                     changed["reasoning"])])
    write_report(traced, report, core=CORE)
    assert computed[-1] == ["core: n20_p0.6", "budgets: n20_p0.6_unfiltered"]


def test_new_code_computes_every_part_again(tmp_path, first, computed, monkeypatch):
    report = _last(first, tmp_path)
    monkeypatch.setattr(kept_figures, "code_key", lambda: "other code")
    write_report(_everything(), report, core=CORE)
    assert computed[-1] == first[1]


def test_a_part_whose_figure_is_gone_is_computed_again(tmp_path, first, computed):
    report = _last(first, tmp_path)
    (report / "figures" / "fig17_all_patterns_n20_p0.6.png").unlink()
    write_report(_everything(), report, core=CORE)
    assert computed[-1] == ["core: n20_p0.6"]
    assert _files(report) == _files(first[0])


def test_the_headline_keeps_its_rows_per_slice(tmp_path, first, computed):
    """The headline analyze.py prints, from the report's kept parts: the same table as computed afresh,
    each slice's row computed again only where its records changed."""
    from mip.analysis.headline import headline

    report, shown = _last(first, tmp_path), []
    write_report(_everything(), report, core=CORE, summary=shown.append)
    assert computed[-1].count("headline") > 5 and set(computed[-1]) == {"headline"}
    pd.testing.assert_frame_equal(shown[-1], headline(_everything()))
    more = _everything(*cell(3, "majority_first", [C, I], n=40))  # unmatched at n = 20: left out of the grid
    write_report(more, report, core=CORE, summary=shown.append)
    assert computed[-1] == ["generalisability: 20k_unknown: cells", "headline"]  # the cells note counts them
    pd.testing.assert_frame_equal(shown[-1], headline(more))


def test_after_one_more_job_analyze_writes_what_a_fresh_analysis_writes(tmp_path, computed):
    """analyze.py's way (records read from a store, report.html's record pages): after one more job at
    another (n, p) cell, the rerun computes the grid's parts and keeps the core's, and its report is a fresh
    analysis's of the same store, file for file."""
    from .test_report_scale import _analyze, _job, _store

    results = tmp_path / "results"
    store = _store(results, patterns=("majority_first", "majority_last"))
    _job(results, 10, "majority_first")
    report = _analyze(store, tmp_path / "out", f"paths.results_dir={results}", save=_stub)
    assert "core: n20_p0.6" in computed[-1]
    _job(results, 10, "majority_last")
    _analyze(store, tmp_path / "out", f"paths.results_dir={results}", save=_stub)
    assert "core: n20_p0.6" not in computed[-1] and "generalisability: smoke_unfiltered: cells" in computed[-1]
    fresh = _analyze(store, tmp_path / "fresh", f"paths.results_dir={results}", save=_stub)
    got, want = _files(report), _files(fresh)
    assert sorted(got) == sorted(want) and [name for name in want if got[name] != want[name]] == []
