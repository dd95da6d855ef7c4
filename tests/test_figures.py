"""mip.analysis.report.figures: every title a report writes lies inside its figure, an empty slice says
"no data", and bars at 0 % or without a value are labelled, at their own model's tick.

The figure functions run on tiny frames; the report test draws each figure where
mip.analysis.report.figures.save would encode it (Figure.savefig), without encoding."""

from __future__ import annotations

import matplotlib.figure
from matplotlib.container import BarContainer
import numpy as np
import pandas as pd
import pytest

from mip.analysis import slices, stats
from mip.analysis.report import write_report
from mip.analysis.report import drawing, figures, strategy_section as strategies, metric_tables as tables, trace_figures, variant_figures
from mip.analysis.report.titles import fill as fill_title, fit as fit_title
from mip.analysis.report.model_sets import TracePool
from mip.analysis.report.titles import fit, titles

from .test_stats import cell, frame


def outside(fig) -> list[str]:
    """The titles whose drawn extent leaves the figure, as the Agg canvas renders it."""
    fig.canvas.draw()
    edge = fig.bbox
    return [t.get_text() for t in titles(fig)
            if (box := t.get_window_extent()).x0 < edge.x0 or box.x1 > edge.x1 or box.y0 < edge.y0 or box.y1 > edge.y1]


def texts(fig) -> list[str]:
    """Every text an axes of ``fig`` shows: annotations, bar labels, "no data"."""
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def pattern_rows(rows: list[tuple[str, str, float, int]]) -> pd.DataFrame:
    """A per-model-and-pattern accuracy table as stats.pattern_table gives it."""
    return pd.DataFrame([{"model": m, "pattern": p, "acc_mean": a, "acc_sd": 0.0, "valid": v} for m, p, a, v in rows])


def report_rows() -> pd.DataFrame:
    """One model in every section that draws a figure: core (two budgets), prompt variants,
    a generalisability cell, traces for the coverage figures, a decomposed strategy."""
    trace = {"reasoning": "Instances 1, 2 and 5 are positive."}
    rows = []
    for budget in ("20k", "100k"):
        for seed in (0, 1):
            rows += cell(seed, "majority_first", ["correct", "incorrect", "invalid"], budget=budget, **trace)
            rows += cell(seed, "majority_middle", ["incorrect"] * 3, budget=budget, **trace)
            rows += cell(seed, "random", ["correct"] * 3, budget=budget, order_seed=0, **trace)
    rows += cell(0, "majority_first", ["correct"] * 3, prompt_variant="hint")
    rows += cell(0, "majority_middle", ["correct"] * 3, prompt_variant="hint")
    rows += cell(1, "majority_first", ["correct"] * 3, n=10, **trace)
    rows += cell(0, "majority_first", ["correct"] * 2, strategy="decomposed", calls=3, position_errors=[0.0, 1.0, 0.0, 1.0])
    return slices.add_columns(frame(rows))


def test_every_figure_a_report_writes_keeps_its_titles_inside_the_figure(tmp_path, monkeypatch):
    drawn: dict[str, list[str]] = {}

    def measure(fig, path, **kwargs):  # in place of encoding: the figure as save would write it
        if str(path).endswith(".png"):
            drawn[path.stem] = outside(fig)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", measure)
    monkeypatch.setattr(drawing, "WORKERS", 1)  # drawn in this process, where measure sees them
    write_report(report_rows(), tmp_path / "report", core=(20, 0.6), pool=TracePool(chosen=("M",)))
    names = {stem.split("_")[0] for stem in drawn}
    assert {"fig2", "fig3", "fig4", "fig5", "fig9", "fig10", "fig11", "fig14", "fig15", "fig16", "fig17", "fig18",
            "fig20", "fig21", "fig22", "fig23", "budgets", "position"} <= names, names
    # With one model Fig. 14 is 500 px wide and its title was 533 px, cut off at both sides.
    assert {stem: cut for stem, cut in drawn.items() if cut} == {}


def test_a_long_title_is_wrapped_to_the_figure_and_a_short_one_kept():
    fig = figures.error_types(frame(cell(0, "majority_first", ["correct", "invalid"], invalid_kind=None)))
    long = "Error types per model (mistakes and invalid outputs by kind)"
    assert fig.axes[0].get_title() == long and outside(fig) == [long]
    fit(fig)
    assert outside(fig) == [] and "\n" in fig.axes[0].get_title()
    assert fig.axes[0].get_title().replace("\n", " ") == long
    # Each model's "n=" is under its name (the axis stops at 100; a label above the axes was not drawn).
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["M\n(n=2)"] and fig.axes[0].get_ylim()[1] == 100
    short = figures.heatmap(pd.DataFrame({"a": [1.0]}), "Short", "accuracy (%)")
    fit(short)
    assert short.axes[0].get_title() == "Short"


def test_a_wrapped_title_keeps_a_count_with_its_noun():
    """Fig. 9's title wraps at 110 columns; "6 experiments" is never split over two lines."""
    head = "simulated_first_k, n=2000 p=0.55 pool=unfiltered: outcomes per pattern and budget (Fig. 9); task ner,"
    title = fill_title(head + " 6 experiments (numbers: mean valid-only accuracy over seeds)", 110)
    assert not any(line.rstrip().endswith("6") for line in title.splitlines())
    assert "6\u00a0experiments" in title and title.replace("\u00a0", " ").replace("\n", " ") == \
        head + " 6 experiments (numbers: mean valid-only accuracy over seeds)"
    # Titles fit() wraps to a figure's width keep them together too (Fig. 4's "216 experiments").
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_title("Prompt variants (Fig. 4), n=2000 p=0.55 pool=unfiltered; task ner, 216 experiments: accuracy")
    fit_title(fig)
    assert "\n" in ax.get_title() and not any(line.endswith("216") for line in ax.get_title().splitlines())


@pytest.mark.parametrize("empty", [
    lambda: figures.pattern_bars(pd.DataFrame()),
    lambda: figures.heatmap(pd.DataFrame(), "Fig. 3", "accuracy (%)"),
    lambda: variant_figures.variant_panels(pd.DataFrame()),
    lambda: figures.budgets(pd.DataFrame()),
    lambda: figures.budget_outcomes(pd.DataFrame(), pd.DataFrame(), "Fig. 9"),
    lambda: trace_figures.mention_rates(pd.DataFrame({"pattern": []}), 10, 0.6),
    lambda: figures.counterpart_pairs(pd.DataFrame(), "Fig. 18"),
    lambda: variant_figures.variant_deltas(pd.DataFrame(), "Fig. 20"),
], ids=["pattern_bars", "heatmap", "variant_panels", "budgets", "budget_outcomes", "mention_rates", "fig18", "fig20"])
def test_a_figure_without_data_is_not_drawn_and_says_why(empty):
    missing = empty()
    assert isinstance(missing, figures.Missing) and "no data" in missing.reason


def test_a_zero_bar_is_labelled_and_a_missing_one_says_n_a_at_its_own_tick():
    table = pattern_rows([("a", "majority_first", 0.5, 4), ("b", "majority_first", 0.0, 4), ("c", "majority_first", 0.8, 4),
                          ("a", "majority_middle", 0.25, 4), ("b", "majority_middle", np.nan, 0),
                          ("c", "majority_middle", 0.75, 4)])
    table = table.drop(index=4)  # majority_middle has no row for b at all: reindexed, not shifted
    fig = figures.pattern_bars(table)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    first, middle = [c for c in ax.containers if isinstance(c, BarContainer)]
    ticks = ax.get_xticks()
    width = first[0].get_width()
    # Each bar sits beside its own model's tick: c's middle bar is at c, not in b's empty place.
    assert [round(b.get_x() + width / 2 - t, 6) for b, t in zip(middle, ticks)] == [round(width / 2, 6)] * 3
    assert np.isnan(middle[1].get_height()) and middle[2].get_height() == pytest.approx(75)
    labels = {(round(t.xy[0], 3), t.get_text()) for t in ax.texts}
    assert (round(ticks[1] - width / 2, 3), "0% (4)") in labels  # b's 0 % bar under majority_first
    assert (round(ticks[1] + width / 2, 3), "n/a") in labels  # b has no majority_middle value


def test_save_encodes_a_png_and_a_pdf(tmp_path):
    """What a report writes for each figure (the slow test_every_figure_is_encoded_as_png_and_pdf
    opens every one of a report; the fast report tests draw them without encoding)."""
    from PIL import Image

    fig = figures.error_types(frame(cell(0, "majority_first", ["correct", "invalid"], invalid_kind=None)))
    png, pdf = figures.save(fig, tmp_path / "figures", "fig_errors")
    with Image.open(png) as image:
        assert image.format == "PNG" and min(image.size) > 300
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 1000


def test_an_all_zero_count_heatmap_is_neutral_with_whole_number_ticks():
    """Fig. 15 with no invalid experiment was a red heatmap with a −0.1…0.1 colour bar."""
    zeros = pd.DataFrame({"arith / random": [0, 0], "arith / majority_first": [0, 0]}, index=["a", "b"])
    fig = figures.heatmap(zeros, "Fig. 15", "invalid experiments", counts=zeros + 6, scale=1.0, cmap="Reds")
    image = fig.axes[0].images[0]
    assert image.cmap(image.norm(0.0)) == image.cmap(0.0)  # the lightest colour of the map
    assert image.norm.vmin == 0 and image.norm.vmax >= 1
    fig.canvas.draw()
    ticks = fig.axes[1].get_yticks()
    assert len(ticks) and all(float(t).is_integer() and t >= 0 for t in ticks)


def test_mention_rates_run_0_to_100_with_whole_instance_ids():
    """Fig. 5's y-axis started near 50 and its x-ticks read 2.5, 7.5."""
    rates = pd.DataFrame({"model": "M", "pattern": "all patterns", "position": range(1, 21),
                          "rate": [1.0] * 9 + [0.5] * 11, "experiments": 4})
    fig = trace_figures.mention_rates(rates, 20, 0.6, "per model")
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    assert low <= 0 and high >= 100 and set(ax.get_yticks()) <= {0, 25, 50, 75, 100}
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in ax.get_xticks())
    assert "per model" in fig._suptitle.get_text()


def test_tables_show_missing_values_as_a_dash(tmp_path):
    md, csv, tex = tables.write_table(pd.DataFrame({"model": ["a", "b"], "acc": [0.5, np.nan]}), tmp_path, "t")
    assert "nan" not in md.read_text().lower() and "–" in md.read_text()
    assert "nan" not in tex.read_text().lower()
    assert pd.read_csv(csv)["acc"].isna().tolist() == [False, True]


def test_position_errors_without_any_label_are_not_drawn_and_the_report_says_why(tmp_path, recwarn):
    """position_error_rates.png was an empty panel, with "Mean of empty slice" on stderr."""
    rows = cell(0, "majority_first", ["correct"] * 2, strategy="decomposed", calls=3, position_errors=[None] * 4)
    missing = strategies.position_errors(frame(rows), "Decomposed")
    assert isinstance(missing, figures.Missing) and "no experiment of this slice labelled any instance" in missing.reason
    assert not [w for w in recwarn if "empty slice" in str(w.message)]
    text = write_report(slices.add_columns(frame(rows)), tmp_path / "report", core=(20, 0.6)).read_text()
    assert "position_error_rates_M_n20_p0.6_20k_standard_decomposed_unknown_core (figure not drawn)" in text
    assert not list((tmp_path / "report" / "figures").glob("position_error_rates*"))


def test_fig18_draws_each_task_with_counterpart_pairs_overlaid_per_slice():
    rows = []
    for model in ("A", "B"):
        for seed in (0, 1):
            rows += [{"model": model, "seed": seed, "task": task, "pattern": p, "verdict": v}
                     for task in ("ner", "wsd") for p, v in (("majority_first", "correct"), ("majority_last", "incorrect"),
                                                            ("random", "correct"))]
    by_task = stats.pattern_table(frame(rows), ["model", "task"])
    fig = figures.counterpart_pairs(by_task, "Fig. 18")
    assert [ax.get_title() for ax in fig.axes] == ["A · ner", "A · wsd", "B · ner", "B · wsd"]
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[:2] == ["random\n100", "first|last\n100 | 0"]  # majority_last's 0 % is written, not left blank


def test_fig20_is_per_model_and_pattern_with_sd_over_seeds():
    rows = []
    for seed, (standard, hint) in enumerate([(1.0, 0.5), (1.0, 1.0), (0.5, 0.5)]):
        for pattern in ("majority_first", "majority_middle"):
            for variant, acc in (("standard", standard), ("hint", hint if pattern == "majority_first" else standard)):
                rows += cell(seed, pattern, ["correct", "correct" if acc == 1.0 else "incorrect"], prompt_variant=variant)
    deltas = stats.variant_deltas(frame(rows), ["model", "pattern"]).set_index("pattern")
    assert deltas.loc["majority_first", "delta_mean"] == pytest.approx(-0.5 / 3)  # (−0.5 + 0 + 0) / 3
    assert deltas.loc["majority_first", "delta_sd"] == pytest.approx(pd.Series([-0.5, 0, 0]).std())
    assert deltas.loc["majority_middle", "delta_mean"] == 0 and deltas.loc["majority_first", "seeds"] == 3
    fig = variant_figures.variant_deltas(deltas.reset_index(), "n=20 p=0.6")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["majority-first", "majority-middle"]
    assert "-16.7\n± 28.9\n(3 seeds)" in [t.get_text() for t in ax.texts]


def test_item_5_cosmetics_widths_axes_and_small_values(tmp_path):
    """Figs. 15 and 20 were 6,150 and 4,950 px wide; rate axes ran to 110; 0.45 % coverage read "0"."""
    from PIL import Image

    from mip.experiment.instances import PATTERNS

    rows = [dict(r, model=m, task=t) for m in ("A", "B") for t in ("math", "ner", "occurrence", "sentiment", "wsd")
            for r in cell(0, "majority_first", ["correct", "invalid"], invalid_kind=None)]
    wide = figures.heatmap(pd.DataFrame(np.ones((2, 35))), "35 columns", "count", scale=1.0)
    [png, _] = figures.save(wide, tmp_path, "wide")
    assert Image.open(png).size[0] <= figures.MAX_WIDTH_PX
    deltas = pd.DataFrame([{"model": "A", "prompt_variant": v, "pattern": p, "delta_mean": 0.0, "delta_sd": 0.0, "seeds": 1}
                           for v in ("hint", "strategy", "self_prompt") for p in (*PATTERNS, "overall")])
    [png, _] = figures.save(variant_figures.variant_deltas(deltas, "Fig. 20"), tmp_path, "fig20")
    assert Image.open(png).size[0] <= figures.MAX_WIDTH_PX
    for fig in (figures.error_types(frame(rows)), figures.budgets(pd.DataFrame(
            [{"model": "A", "budget": b, "acc": 1.0, "acc_all": 1.0, "invalid_rate": 0.0} for b in ("100k", "20k")]))):
        assert all(ax.get_ylim()[1] == 100 for ax in fig.axes if ax.get_ylabel().endswith("(%)"))
    legend = figures.budgets(pd.DataFrame([{"model": "A", "budget": b, "acc": 1.0, "acc_all": 1.0, "invalid_rate": 0.0}
                                           for b in ("100k", "20k")])).axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["20k", "100k"]  # 100k was listed first
    small = figures.heatmap(pd.DataFrame([[0.0045]]), "coverage", "coverage (%)")
    assert "0.45" in [t.get_text().split("\n")[0] for t in small.axes[0].texts]
    import matplotlib.pyplot as plt

    plt.close("all")


def test_slices_are_shown_by_budget_value_not_by_their_labels_text():
    """Fig. 15's columns (and every figure over the core's row labels) put a model's 20k before its
    100k: the labels sorted as text read "m · 100k" first."""
    from mip.analysis.report.sections import _rows, row_order

    frame = pd.DataFrame({"model": ["m", "m", "a", "a"], "budget": ["100k", "20k", "20k", "100k"],
                          "pool": "unfiltered"})
    assert row_order(_rows(frame)) == ["a · 20k", "a · 100k", "m · 20k", "m · 100k"]
