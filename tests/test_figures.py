"""mip.report.figures: every title a report writes lies inside its figure, an empty slice says
"no data", and bars at 0 % or without a value are labelled, at their own model's tick.

The figure functions run on tiny frames; the report test draws each figure where
mip.report.figures.save would encode it (Figure.savefig), without encoding."""

from __future__ import annotations

import matplotlib.figure
from matplotlib.container import BarContainer
import numpy as np
import pandas as pd
import pytest

from mip import slices
from mip.report import figures, write_report
from mip.report.titles import fit, titles

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
    write_report(report_rows(), tmp_path / "report", core=(20, 0.6))
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
    # Each model's "n=" above its stack lies inside the axes (one outside them is not drawn).
    assert [t.get_text() for t in fig.axes[0].texts] == ["n=2"] and fig.axes[0].texts[0].xy[1] < fig.axes[0].get_ylim()[1]
    short = figures.no_data("Counterpart pairs")
    fit(short)
    assert short.axes[0].get_title() == "Counterpart pairs"


@pytest.mark.parametrize("empty", [
    lambda: figures.pattern_bars(pd.DataFrame()),
    lambda: figures.heatmap(pd.DataFrame(), "Fig. 3", "accuracy (%)"),
    lambda: figures.variant_panels(pd.DataFrame()),
    lambda: figures.budgets(pd.DataFrame()),
    lambda: figures.budget_outcomes(pd.DataFrame(), pd.DataFrame(), "Fig. 9"),
    lambda: figures.mention_rates(pd.DataFrame({"pattern": []}), 10, 0.6),
], ids=["pattern_bars", "heatmap", "variant_panels", "budgets", "budget_outcomes", "mention_rates"])
def test_a_figure_without_data_says_so_instead_of_being_blank(empty):
    fig = empty()
    assert texts(fig) == ["no data"] and fig.axes[0].get_title()


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
