"""analyze.py end to end: every table and figure from a small record set, the same numbers
from the local store and from W&B offline runs, and clear messages on bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from mip.analysis import stats
from mip.analysis.report import write_report
from mip.analysis.report.model_sets import TracePool
from mip.analysis.results import ResultsError, load_local, load_wandb_offline
from mip.job import run_job

from .conftest import REPO, compose, run_entry, vary
from .fake_server import FakeServer
from .test_tracking import wandb_env  # noqa: F401 - fixture

PATTERNS = ["random", "majority_first", "majority_last", "majority_edges", "majority_middle",
            "soft_majority_edges", "soft_majority_middle"]


def grid(tmp_path, model_args, cells, patterns=PATTERNS, seeds=(0, 1), variants=("standard",), budgets=("smoke",), extra=()):
    """One job per cell, pattern, seed, variant and budget; composed once per cell, variant and budget."""
    for (n, p) in cells:
        for variant in variants:
            for budget in budgets:
                base = compose(*model_args, "task=arith", f"n={n}", f"p={p}", f"prompt_variant={variant}",
                               f"budget={budget}", "progress=false", f"paths.results_dir={tmp_path}",
                               f"paths.cache_dir={tmp_path / 'cache'}", *extra)
                for pattern in patterns:
                    for seed in seeds:
                        run_job(vary(base, pattern=pattern, seed=seed),
                                tmp_path / "jobs" / f"{n}-{p}-{pattern}-{seed}-{variant}-{budget}-{model_args[0]}")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analysis")
    with FakeServer(reasoning_shape="reasoning") as server:
        served = ["model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                  "model.context_window=100000", "model.name=fake"]
        grid(tmp, served, [(10, 0.6), (20, 0.7)])
        grid(tmp, served, [(10, 0.6)], patterns=["majority_first", "majority_middle"], variants=("hint",))
        grid(tmp, served, [(10, 0.6)], patterns=["majority_first", "majority_middle"], budgets=("20k",))
    grid(tmp, ["model=mock"], [(10, 0.6)])
    return tmp


def test_report_has_every_table_and_figure(store, tmp_path, figures_unencoded):
    """Every table and figure is written and linked; the figures are drawn, not encoded
    (test_every_figure_is_encoded_as_png_and_pdf, a slow test, encodes them all)."""
    frame = load_local([store / "store"])
    # Traces stay the Python strings they were read as (an Arrow copy cost as much as the read).
    assert frame["reasoning"].dtype == object and frame["reasoning"].map(type).isin([str, type(None)]).all()
    path = write_report(frame, tmp_path / "report", core=None, pool=TracePool(chosen=("fake", "mock")))
    text = path.read_text()
    figures = sorted(set(re.findall(r"\((figures/[^)]+\.png)\)", text)))
    names = {f.split("/")[1].split("_")[0] for f in figures}
    assert {"fig2", "fig3", "fig4", "fig5", "fig9", "budgets", "fig10", "fig11", "fig14", "fig15", "fig16", "fig17", "fig18", "fig20",
            "fig21", "fig22", "fig23"} <= names
    assert len(figures) >= 20
    tables = {p.stem for p in (tmp_path / "report" / "tables").glob("*.csv")}
    prefixes = {t.rsplit("_n", 1)[0].rsplit("_smoke", 1)[0] for t in tables}
    assert {"table2", "table2_numbers", "table3_coverage", "patterns_by_model", "intervals_and_tests", "budgets",
            "table5_prompt_variants", "table7_coverage_by_budget", "reference_c4"} <= prefixes, prefixes
    assert any(t.startswith("generalisability_cells") for t in tables)
    assert any(t.startswith("prompt_variant_deltas") for t in tables)
    assert list((tmp_path / "report" / "data").glob("mention_rates_n10_p0.6_*.csv"))  # long data: CSV only
    for stem in tables:
        for suffix in (".md", ".tex"):
            assert (tmp_path / "report" / "tables" / f"{stem}{suffix}").stat().st_size > 0
    table2 = pd.read_csv(tmp_path / "report" / "tables" / "table2_n10_p0.6.csv")
    # One row per slice: fake at two budgets is two rows, never pooled; mock is one.
    assert sorted(zip(table2["Model"], table2["Budget"])) == [("fake", "20k"), ("fake", "smoke"), ("mock", "smoke")]
    fake = table2.set_index(["Model", "Budget"]).loc[("fake", "smoke")]
    assert fake["Acc (%)"].startswith("100.0")  # the fake server answers every arithmetic set correctly
    assert fake["Experiments"] == 2 * 2 * 9  # 2 seeds × 2 labels × (6 structured + 3 random orders): this slice only
    coverage_table = pd.read_csv(tmp_path / "report" / "tables" / "table3_coverage_n10_p0.6.csv")
    fake_cov = coverage_table[(coverage_table["model"] == "fake") & (coverage_table["budget"] == "smoke")]
    assert fake_cov["experiments"].sum() == 36  # every valid run is in a bin, traceless ones in "no trace"


@pytest.mark.slow
def test_every_figure_is_encoded_as_png_and_pdf(store, tmp_path):
    """The report above with its figures encoded, as analyze.py writes them (~15 s of CPU)."""
    from PIL import Image

    text = write_report(load_local([store / "store"]), tmp_path / "report", core=None).read_text()
    linked = sorted(set(re.findall(r"\((figures/[^)]+\.png)\)", text)))
    assert len(linked) >= 20
    for png in linked:
        with Image.open(tmp_path / "report" / png) as image:
            assert image.format == "PNG" and min(image.size) > 300
        assert (tmp_path / "report" / png).with_suffix(".pdf").read_bytes().startswith(b"%PDF")


def test_analyze_cli_writes_the_report(tmp_path):
    """analyze.py end to end on a small store (every table and figure is the test above's)."""
    grid(tmp_path, ["model=mock"], [(10, 0.6)], patterns=["majority_first", "majority_middle"], seeds=(0,))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "analyze.py"), f"results=[{tmp_path / 'store'}]", f"out_dir={out}"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "report.md").is_file() and "Report:" in proc.stdout


def test_local_store_and_wandb_offline_runs_give_the_same_numbers(tmp_path, wandb_env):  # noqa: F811
    grid(tmp_path, ["model=mock"], [(10, 0.6)], patterns=["majority_first", "majority_middle", "random"], seeds=(0, 1, 2),
         extra=("logger=wandb",))
    local = load_local([tmp_path / "store"])
    remote = load_wandb_offline([tmp_path / "jobs"])
    assert len(local) == len(remote) == 3 * (2 + 2 + 6)
    pd.testing.assert_frame_equal(stats.model_table(local), stats.model_table(remote))
    pd.testing.assert_frame_equal(stats.pattern_table(local), stats.pattern_table(remote))


def test_records_of_one_key_count_once(store):
    once = load_local([store / "store"])
    twice = load_local([store / "store", store / "store"])
    assert len(once) == len(twice)


def test_empty_store_gets_a_clear_message(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError, match="No records found"):
        load_local([tmp_path / "empty"])
    proc = run_entry("analyze.py", f"results=[{tmp_path / 'empty'}]", f"out_dir={tmp_path / 'out'}")
    assert proc.returncode == 2 and "No records found" in proc.stderr


def test_foreign_json_is_skipped_with_a_warning_naming_it(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "other.json").write_text(json.dumps({"hello": "world"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ResultsError, match="No records found"):
            load_local([folder])
    assert any("other.json" in str(w.message) for w in caught)


def test_missing_patterns_and_all_invalid_patterns_are_reported(tmp_path):
    from mip.analysis.report import coverage_notes

    from .test_stats import cell, frame

    rows = cell(0, "majority_first", ["correct"]) + cell(0, "majority_middle", ["invalid"])
    rows += [{"model": "N", "pattern": "majority_first", "seed": 1}]
    notes = " ".join(coverage_notes(frame(rows)))
    assert "every experiment of pattern majority_middle is invalid" in notes
    assert "N: no experiments for pattern(s) majority_middle" in notes and "N: no experiments for seed(s) [0]" in notes
    assert "Patterns absent from all records" in notes


def test_report_logged_to_wandb_offline(store, tmp_path, wandb_env):  # noqa: F811
    from mip.analysis.analyze import analyze
    from mip.config import AnalyzeConfig

    cfg = AnalyzeConfig(results=[str(store / "store")], out_dir=str(tmp_path / "report"))
    cfg.wandb.log_report = True
    cfg.wandb.group = "test-sweep"
    analyze(cfg)
    images = list((tmp_path / "report").rglob("offline-run-*/files/media/images/**/*.png"))
    logged_tables = list((tmp_path / "report").rglob("offline-run-*/files/media/table/**/*.table.json"))
    assert len(images) == len(list((tmp_path / "report" / "figures").glob("*.png")))
    assert len(logged_tables) == len(list((tmp_path / "report" / "tables").glob("*.csv")))


def _frame(rows):
    from mip.analysis import slices

    from .test_stats import frame

    return slices.add_columns(frame(rows))


def test_a_slice_without_valid_experiments_gives_nan_and_a_note_not_a_crash(tmp_path, figures_unencoded):
    from .test_stats import cell

    rows = cell(0, "majority_first", ["invalid"] * 3, model="dead") + cell(0, "majority_middle", ["invalid"] * 3, model="dead")
    rows += cell(0, "majority_first", ["correct"] * 2, model="ok") + cell(0, "majority_middle", ["incorrect"] * 2, model="ok")
    path = write_report(_frame(rows), tmp_path / "report", core=(20, 0.6))  # crashed with IndexError before
    text = path.read_text()
    table = pd.read_csv(tmp_path / "report" / "tables" / "table2_n20_p0.6.csv").set_index("Model")
    assert table.loc["dead", "Acc (%)"] == "–" and table.loc["dead", "Sets"] == 0
    assert table.loc["dead", "π⁺ / π⁻"] == "– / –"  # not "None / None"
    assert "dead: every experiment of pattern majority_first is invalid" in text
    # Two sets cannot support a test: the paper's † stays, mip's own test says so.
    assert table.loc["ok", "Δ (pp)"] == "100.0†" and "2 sets, 1 paired seed" in table.loc["ok", "Rests on"]
    tests = pd.read_csv(tmp_path / "report" / "tables" / "intervals_and_tests_n20_p0.6.csv").set_index("model")
    assert tests.loc["ok", "test"].startswith("not testable") and pd.isna(tests.loc["ok", "p_value"])


def test_settings_are_never_pooled_and_strays_are_listed(tmp_path, figures_unencoded):
    from .test_stats import cell

    rows = []
    for budget in ("20k", "100k"):
        for seed in (0, 1):
            rows += cell(seed, "majority_first", ["correct"] * 3, budget=budget)
            rows += cell(seed, "majority_middle", ["incorrect"] * 3, budget=budget)
    rows += cell(0, "majority_first", ["correct"] * 3, n=10, prompt_variant="hint")  # a variant off the core: no section
    rows += cell(0, "majority_first", ["correct"] * 3, prompt_variant="hint", shuffle_seed=4)  # expanded
    path = write_report(_frame(rows), tmp_path / "report", core=(20, 0.6))
    table = pd.read_csv(tmp_path / "report" / "tables" / "table2_n20_p0.6.csv")
    assert table["Budget"].tolist() == ["20k", "100k"] and set(table["Experiments"]) == {12}  # by value
    stray = pd.read_csv(tmp_path / "report" / "tables" / "unassigned.csv")
    assert stray[["n", "experiments"]].values.tolist() == [[10, 3]]
    assert (tmp_path / "report" / "tables" / "expanded_orderings.csv").is_file()
    assert "fit no section" in path.read_text()
    only = write_report(_frame(rows), tmp_path / "only", core=(20, 0.6), where=__import__("mip.config").config.WhereConfig(budget="100k"))
    assert pd.read_csv(tmp_path / "only" / "tables" / "table2_n20_p0.6.csv")["Budget"].tolist() == ["100k"]
    assert "where.budget=100k" in only.read_text()
    elsewhere = write_report(_frame(rows), tmp_path / "paper_core")  # the paper's core: none of these records
    assert "No standard-prompt record is at the core setting n = 2000, p = 0.55: each (n, p) cell the records hold " \
        "is analysed as its own core cell: (20, 0.6)" in elsewhere.read_text()
    assert sorted(p.name for p in (tmp_path / "paper_core" / "tables").glob("table2_*.csv")) == \
        ["table2_n20_p0.6.csv", "table2_numbers_n20_p0.6.csv"]


def test_where_restricts_and_refuses_what_matches_nothing(store, tmp_path, figures_unencoded):
    """``where.model=[fake]`` as analyze.py composes it (in this process; analyze.py from the shell
    is test_analyze_cli_writes_the_report's)."""
    from mip.analysis.analyze import analyze
    from mip.analysis.slices import SliceError

    args = (f"results=[{store / 'store'}]", f"out_dir={tmp_path / 'out'}", "core=null")
    analyze(compose(*args, "where.budget=20k", "where.model=[fake]", config_name="analyze"))
    table = pd.read_csv(tmp_path / "out" / "tables" / "table2_n10_p0.6.csv")
    assert table[["Model", "Budget"]].values.tolist() == [["fake", "20k"]]
    with pytest.raises(SliceError, match="where.budget=2k matches no record"):
        analyze(compose(*args, "where.budget=2k", config_name="analyze"))


def test_the_generalisability_grid_keeps_the_seeds_every_cell_holds():
    from mip.analysis import slices

    from .test_stats import cell

    rows = [r for seed in (0, 1, 2) for r in cell(seed, "majority_first", ["correct"], n=20, p=0.6)]  # core, 3 seeds
    rows += cell(1, "majority_first", ["incorrect"], n=10, p=0.6)  # a grid cell at seed 1 only (§4.2)
    parts = slices.sections(_frame(rows), core=(20, 0.6))
    assert sorted(set(parts.generalisability["seed"])) == [1] and len(parts.generalisability) == 2
    assert len(parts.core) == 3 and parts.rest.empty
    assert any("(n=10, p=0.6): 1 held, 1 matched, 0 dropped; (n=20, p=0.6): 3 held, 1 matched, 2 dropped (t0 2)" in note
               for note in parts.notes)


def test_the_generalisability_grid_keeps_the_tasks_every_cell_holds():
    """The core cell on two tasks beside a cell on one: the grid compares the task both hold."""
    from mip.analysis import slices

    from .test_stats import cell

    rows = cell(1, "majority_first", ["correct", "incorrect"], n=20, p=0.6)  # tasks t0 and t1
    rows += cell(1, "majority_first", ["correct"], n=10, p=0.6)  # t0 only
    parts = slices.sections(_frame(rows), core=(20, 0.6))
    assert sorted(set(parts.generalisability["task"])) == ["t0"] and len(parts.generalisability) == 2
    assert any("2 held, 1 matched, 1 dropped (t1 1)" in note for note in parts.notes)


def test_the_grid_says_beside_its_table_what_it_matched(tmp_path, figures_unencoded):
    from .test_stats import cell

    rows = cell(1, "majority_first", ["correct", "incorrect"], n=20, p=0.6) + cell(1, "majority_first", ["correct"], n=10, p=0.6)
    text = write_report(_frame(rows), tmp_path / "report", core=(20, 0.6)).read_text()
    beside = text.split("### generalisability_cells_20k_unknown (table)")[1].split("###")[0]
    assert "(n=20, p=0.6): 2 held, 1 matched, 1 dropped (t1 1)" in beside
