"""Figs. 33, 34 and 35 (App. F.3, F.4): profiles pooled over label distributions, instance counts
or patterns, tasks weighted equally, with the accuracy of the same replays beside them.

The replays are built by hand (a real replay is test_attribution's slow test); the shares are
chosen so that each expected curve is a number worked out here, not by mip."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mip.attribution.pooled import pooled_figures
from mip.attribution.replay import write_outputs
from mip.config import AttributeConfig


def replay(task, n, p, share_first_half, correct, pattern="majority_first", variant="standard"):
    """A replay whose first half of instances has share ``share_first_half`` and the second half 1."""
    half = n // 2
    share = [share_first_half] * half + [1.0] * (n - half)
    return {"key": f"{task}-{n}-{p}-{share_first_half}-{pattern}-{variant}-{correct}", "model": "M", "task": task, "n": n,
            "p": p, "majority_label": "A", "seed": 0, "pattern": pattern, "order_seed": None, "shuffle_seed": None,
            "prompt_variant": variant, "budget": "20k", "strategy": "single_call", "pool_filtered": False,
            "correct": correct, "share": share, "signed": [0.0] * n, "instance_labels": ["A"] * n, "seconds": 1.0,
            "peak_rss_mb": 1.0, "checkpointing": False, "u": share, "tokens": 10, "selected": "A", "score": 0.0}


def grid_replays() -> pd.DataFrame:
    rows = []
    # ner has three replays at n=20 (p 0.6, 0.6, 0.7), sentiment one: tasks weigh equally, not replays.
    rows += [replay("ner", 20, 0.6, 3.0, True), replay("ner", 20, 0.6, 3.0, True), replay("ner", 20, 0.7, 5.0, False)]
    rows += [replay("sentiment", 20, 0.7, 7.0, True)]
    rows += [replay("ner", 40, 0.6, 2.0, True), replay("sentiment", 40, 0.6, 2.0, False),
             replay("sentiment", 40, 0.7, 7.0, False)]
    return pd.DataFrame(rows)


def test_fig33_and_fig34_pool_the_other_condition_with_equal_task_weight():
    made = {name.split("_")[0]: (fig, pd.DataFrame(rows)) for name, fig, rows in pooled_figures(grid_replays(), bins=2)}
    assert set(made) == {"fig33", "fig34"}  # one prompt variant: no Fig. 35
    by_count = made["fig33"][1].pivot(index="n", columns="bin", values="share")
    # Counts compared on the replays both hold (same task and p): ner p=0.6 (two at n=20) and
    # sentiment p=0.7; ner's n=20 p=0.7 and sentiment's n=40 p=0.6 have no twin at the other count.
    # n = 20, first half: ner averages its two replays (3), sentiment is 7; the tasks weigh equally.
    assert by_count.loc[20, 1] == pytest.approx((3 + 7) / 2) and by_count.loc[20, 2] == pytest.approx(1.0)
    assert by_count.loc[40, 1] == pytest.approx((2 + 7) / 2)
    by_distribution = made["fig34"][1].pivot(index="p", columns="bin", values="share")
    assert by_distribution.loc[0.6, 1] == pytest.approx((3 + 2) / 2)  # ner at n=20, sentiment at n=40
    assert by_distribution.loc[0.7, 1] == pytest.approx((5 + 7) / 2)
    fig = made["fig33"][0]
    curve, side = fig.axes
    assert curve.get_yscale() == "log" and "Fig. 33" in fig._suptitle.get_text()
    assert "ner, sentiment averaged equally" in fig._suptitle.get_text()
    assert "2 replays without a twin left out" in fig._suptitle.get_text().replace("\n", " ")
    # The inset: accuracy (%) of the same replays per count (rows) and distribution (columns).
    cells = {(c.get_text().get_text()) for c in side.tables[0].get_celld().values()}
    assert {"100", "0"} <= cells  # n=20 p=0.6: 2/2; p=0.7: 1/1; n=40 p=0.6: 1/1; n=40 p=0.7: 0/1
    assert {"0.6", "0.7", "20", "40"} <= cells


def test_fig35_compares_prompt_variants_with_the_representative_patterns_accuracy():
    rows = [replay("ner", 20, 0.6, 4.0, True, variant=v, pattern=pat) for v in ("standard", "hint")
            for pat in ("majority_first", "majority_middle")]
    rows += [replay("sentiment", 20, 0.6, 2.0, False, variant=v) for v in ("standard", "hint")]
    made = {name.split("_")[0]: (fig, pd.DataFrame(r)) for name, fig, r in pooled_figures(pd.DataFrame(rows), bins=2)}
    assert set(made) == {"fig35"}
    curves = made["fig35"][1].pivot(index="prompt_variant", columns="bin", values="share")
    assert curves.loc["hint", 1] == pytest.approx(3.0) and curves.loc["standard", 1] == pytest.approx(3.0)
    side = made["fig35"][0].axes[1]
    labels = {c.get_text().get_text() for c in side.tables[0].get_celld().values()}
    assert {"majority-\nfirst", "majority-\nmiddle", "hint", "standard"} <= labels


def test_fig35_compares_prompt_variants_on_the_replays_both_hold():
    """Hint on seeds 0 and 1, the standard prompt on seed 0: the curves compare seed 0 only."""
    rows = [{**replay("ner", 20, 0.6, 4.0, True, variant="standard"), "seed": 0},
            {**replay("ner", 20, 0.6, 4.0, True, variant="hint"), "seed": 0},
            {**replay("ner", 20, 0.6, 10.0, True, variant="hint"), "seed": 1}]
    made = {name.split("_")[0]: pd.DataFrame(r) for name, _, r in pooled_figures(pd.DataFrame(rows), bins=2)}
    curves = made["fig35"].pivot(index="prompt_variant", columns="bin", values="share")
    assert curves.loc["hint", 1] == pytest.approx(4.0) == curves.loc["standard", 1]
    assert set(made["fig35"]["replays"]) == {1}


def test_fig35_compares_each_variant_with_the_standard_prompt_where_they_hold_different_replays():
    """Standard on seeds 0 and 1, hint on seed 0, strategy on seed 1: no seed holds all three, so
    one figure of them all compared nothing; each variant against the standard prompt keeps its pair."""
    rows = [{**replay("ner", 20, 0.6, 4.0, True, variant="standard"), "seed": 0},
            {**replay("ner", 20, 0.6, 6.0, True, variant="standard"), "seed": 1},
            {**replay("ner", 20, 0.6, 4.0, True, variant="hint"), "seed": 0},
            {**replay("ner", 20, 0.6, 6.0, True, variant="strategy"), "seed": 1}]
    made = {name: pd.DataFrame(r) for name, _, r in pooled_figures(pd.DataFrame(rows), bins=2)}
    assert sorted(made) == [n for n in sorted(made) if n.startswith("fig35_")] and len(made) == 2
    hint, strategy = (next(t for n, t in made.items() if n.endswith(f"_{v}")) for v in ("hint", "strategy"))
    assert set(hint["prompt_variant"]) == {"hint", "standard"}
    assert set(strategy["prompt_variant"]) == {"strategy", "standard"}
    for table, share in ((hint, 4.0), (strategy, 6.0)):  # each pair on the seed both hold
        curves = table.pivot(index="prompt_variant", columns="bin", values="share")
        assert curves[1].tolist() == pytest.approx([share, share]) and set(table["replays"]) == {1}


def test_attribute_writes_the_pooled_figures_and_their_numbers(tmp_path):
    from collections import Counter

    cfg = AttributeConfig(relative_bins=2, bin_size=1)
    write_outputs(grid_replays(), tmp_path, Counter(), cfg)
    names = {p.name for p in (tmp_path / "figures").glob("fig3*_profiles_*.png")}
    assert any(n.startswith("fig33_") for n in names) and any(n.startswith("fig34_") for n in names)
    table = pd.read_csv(tmp_path / "pooled_profiles.csv")
    assert set(table["figure"]) == {"fig33", "fig34"} and np.isfinite(table["share"]).all()


def test_attribution_titles_name_the_weights_beside_the_records_and_what_each_holds():
    """Figs. 33/34 named the records' model only; a profile named neither model nor task and said "1 replays"."""
    from mip.attribution.profile_figures import profile_figure

    [(_, fig, _), *_] = pooled_figures(grid_replays(), bins=2, weights="smollm2_135m")
    title = fig._suptitle.get_text()
    assert "M records, attributed with smollm2_135m's weights" in title and "5 replays, matched (2 replays without a twin left out)" in title
    one = pd.DataFrame([replay("ner", 20, 0.6, 3.0, True)])
    (ax,) = profile_figure(np.ones(20), 1, "majority_first", 20, 0.6, one, weights="smollm2_135m").axes
    text = ax.get_title()
    assert "M records, attributed with smollm2_135m's weights; task ner; majority-first" in text and "1 replay," in text
    pooled = pd.concat([one, pd.DataFrame([replay("math", 20, 0.6, 3.0, True)])])
    (ax,) = profile_figure(np.ones(20), 1, "majority_first", 20, 0.6, pooled).axes
    assert "tasks math, ner pooled" in ax.get_title() and "2 replays" in ax.get_title()
