"""One report model (mip.analysis.report.cells): a section registered once shows in report.md and
in report.html, each of its cells linking to the list of the experiments it was computed from.

Built from a synthetic frame (no job runs), as tests/test_html_links.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import mip.analysis.report as report_module
from mip.analysis.report import Section, write_report
from mip.analysis.report.cells import grouped

from .conftest import unencoded
from .test_html_links import _listed, _rows, _table
from .test_analyze import _frame


def tiny(report, frame: pd.DataFrame) -> None:
    """A section of one table: the experiments per model and pattern, each count on its experiments."""
    table = frame.groupby(["model", "pattern"]).size().reset_index(name="experiments")
    report.table(table, "tiny_counts", "Experiments per model and pattern.",
                 grouped(table, frame, ["model", "pattern"], ["experiments"], "Tiny, experiments of"))


@pytest.fixture(scope="module")
def added(tmp_path_factory) -> Path:
    from mip.analysis.report import figures

    folder = tmp_path_factory.mktemp("model") / "report"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save", unencoded)
        tiny_section = Section("tiny", "A tiny section", tiny, records="core")
        patch.setattr(report_module, "SECTIONS", [*report_module.SECTIONS, tiny_section])
        write_report(_frame(_rows()), folder, core=(20, 0.6))
    return folder


def test_a_section_added_once_shows_in_report_md(added):
    text = (added / "report.md").read_text(encoding="utf-8")
    section = text[text.index("## A tiny section"):]
    assert "### tiny_counts (table)" in section and "Experiments per model and pattern." in section
    assert re.search(r"\| M\s+\| majority_first\s+\|\s+15 \|", section), section[:600]


def test_a_section_added_once_shows_in_report_html_with_each_cell_linked_to_its_experiments(added):
    page = (added / "report.html").read_text(encoding="utf-8")
    assert "A tiny section" in page and 'href="#tiny_counts"' in page  # in the contents too
    head, rows = _table(added, "tiny_counts")
    assert head == ["model", "pattern", "experiments"] and len(rows) == 2
    frame = _frame(_rows())
    core = frame[(frame["n"] == 20) & (frame["strategy"] == "single_call") & frame["shuffle_seed"].isna()]
    for (model, _), (pattern, _), (count, href) in rows:
        assert href is not None, (model, pattern)
        listed = _listed(added, href)
        want = core[(core["model"] == model) & (core["pattern"] == pattern)]
        assert sorted(listed["key"]) == sorted(want["key"]) and len(listed) == int(count) > 0


def test_an_unregistered_section_is_in_neither_output(tmp_path, figures_unencoded):
    write_report(_frame(_rows()), tmp_path / "report", core=(20, 0.6))
    assert "tiny_counts" not in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "tiny_counts" not in (tmp_path / "report" / "report.html").read_text(encoding="utf-8")


def test_each_figure_shows_the_table_of_its_numbers_each_linked_to_its_experiments(added):
    from .test_html_links import _check

    page = (added / "report.html").read_text(encoding="utf-8")
    tag = "n20_p0.6"
    accuracy = ["acc_mean", "experiments"]
    for name, key, linked in [(f"fig17_all_patterns_{tag}", ["model", "pattern"], accuracy),
                              (f"fig2_representative_patterns_{tag}", ["model", "pattern"], accuracy),
                              (f"fig18_counterparts_{tag}", ["model", "task", "pattern"], ["acc_mean", "experiments"]),
                              (f"fig15_invalid_counts_{tag}", ["model", "task", "pattern"], ["invalid", "experiments"]),
                              (f"fig16_task_accuracy_{tag}", ["model", "task"], ["acc_mean", "experiments"])]:
        # under its image, in the figure's own entry
        assert page.index(f'<img src="figures/{name}.png"') < page.index(f'id="t-{name}"'), name
        _check(added, name, key, linked)
    grids = sorted(set(re.findall(r'id="t-(fig(?:3|10|11)_np_[^"]+)"', page)))
    assert grids, "the (n, p) figures show their numbers"
    for name in grids:
        rows = _check(added, name, ["n", "p"], ["experiments"])
        assert {r["n"] for r in rows} == {"20", "40"}
    head, rows = _table(added, f"fig14_error_types_{tag}")
    assert head == ["model", "kind", "experiments", "share"]
    for (model, _), (kind, _), (count, href), _ in rows:
        if count == "0":  # no experiment of this kind: nothing to open
            assert href is None, (model, kind)
            continue
        listed = _listed(added, href)
        assert len(listed) == int(count), (model, kind)
        assert set(listed["verdict"]) <= ({"incorrect"} if kind == "incorrect" else {"invalid"})
