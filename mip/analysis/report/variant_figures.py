"""Prompt-variant figures (§4.3, App. D.5): Fig. 4 (accuracy and Δ per variant) and Fig. 20
(per model × pattern, the change from the standard prompt, mean ± sd over selection seeds).

>>> fig = variant_deltas(stats.variant_deltas(frame, ["model", "pattern"]), "n=2000 p=0.55")  # doctest: +SKIP
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mip.analysis import stats  # noqa: E402,F401  (the docstring's example)
from mip.experiment.instances import PATTERNS  # noqa: E402
from mip.analysis.report.figures import no_data  # noqa: E402

VARIANTS = ("standard", "hint", "strategy", "self_prompt")
#: The column of Fig. 20 that pools the patterns (each seed's accuracy over all of them).
OVERALL = "overall"


def _ordered(values, first) -> list[str]:
    present = set(values)
    return [v for v in first if v in present] + sorted(present - set(first))


def variant_panels(table: pd.DataFrame, title: str = "Prompt variants") -> plt.Figure:
    """Fig. 4: accuracy (top) and Δ (bottom) per model and prompt variant, one bar group per
    model and budget; sd over selection seeds; "n/a" where a value is undefined."""
    if table.empty:
        return no_data("Prompt variants")
    rows = table.assign(group=table["model"] + " · " + table["budget"].astype(str))
    groups = sorted(rows["group"].unique())
    variants = _ordered(rows["prompt_variant"], VARIANTS)
    width = 0.8 / max(1, len(variants))
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 1.5 * len(groups) + 2), 6), sharex=True)
    panels = [("acc", "acc_sd", "valid-only accuracy (%)"), ("delta", "delta_sd", "Δ best−worst (pp)")]
    for ax, (column, sd, label) in zip(axes, panels):
        for i, variant in enumerate(variants):
            sub = rows[rows["prompt_variant"] == variant].set_index("group").reindex(groups)
            x = np.arange(len(groups)) + (i - (len(variants) - 1) / 2) * width
            values = pd.to_numeric(sub[column], errors="coerce") * 100
            ax.bar(x, values.fillna(0), width, yerr=(pd.to_numeric(sub[sd], errors="coerce") * 100).fillna(0),
                   capsize=2, label=variant)
            for xi, v in zip(x, values):
                if pd.isna(v) or v == 0:  # undefined, or a 0 bar without height: say which
                    ax.annotate("n/a" if pd.isna(v) else "0", (xi, 1), ha="center", fontsize=6, rotation=90,
                                color="grey" if pd.isna(v) else "black")
        ax.set_ylabel(label)
        ax.set_ylim(0, 105)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[1].set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=7)
    axes[0].set_title(f"{title}: accuracy (top) and best–worst gap (bottom); error bars: sd over seeds", fontsize=9)
    return fig


def variant_deltas(deltas: pd.DataFrame, name: str = "") -> plt.Figure:
    """Fig. 20: one heatmap per prompt variant, rows models, columns the seven patterns and
    their overall; each cell the accuracy change from the standard prompt in pp, mean ± sd
    over the selection seeds both prompts have (the seeds in the cell)."""
    if deltas.empty:
        return no_data(f"Prompt-variant changes (Fig. 20), {name}")
    variants = _ordered(deltas["prompt_variant"], VARIANTS)
    models = sorted(deltas["model"].unique())
    columns = _ordered(deltas["pattern"], (*PATTERNS, OVERALL))
    limit = max(1.0, float(np.nanmax(np.abs(100 * deltas["delta_mean"].to_numpy(float)))))
    # One variant per row, so that the figure stays a page wide however many variants there are.
    fig = plt.figure(figsize=(1.1 * len(columns) + 3, (0.6 * len(models) + 1.6) * len(variants) + 0.6))
    # The colour bar in a column of its own, so that the tight layout keeps it clear of the heatmaps.
    grid_spec = fig.add_gridspec(len(variants), 2, width_ratios=[len(columns), 0.25])
    axes = [fig.add_subplot(grid_spec[i, 0]) for i in range(len(variants))]
    for ax, variant in zip(axes, variants):
        sub = deltas[deltas["prompt_variant"] == variant]
        grid = {c: sub.pivot(index="model", columns="pattern", values=c).reindex(index=models, columns=columns)
                for c in ("delta_mean", "delta_sd", "seeds")}
        values = 100 * grid["delta_mean"].to_numpy(float)
        image = ax.imshow(values, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
        for (r, c), v in np.ndenumerate(values):
            sd, seeds = grid["delta_sd"].iat[r, c], grid["seeds"].iat[r, c]
            label = "n/a" if np.isnan(v) else f"{v:+.1f}" + (f"\n± {100 * sd:.1f}" if pd.notna(sd) else "")
            label += f"\n({int(seeds)} seed{'' if int(seeds) == 1 else 's'})" if pd.notna(seeds) else ""
            ax.text(c, r, label, ha="center", va="center", fontsize=6,
                    color="black" if abs(v) < 0.6 * limit else "white")
        ax.set_xticks(range(len(columns)), [c.replace("_", "-") for c in columns], rotation=35, ha="right", fontsize=7)
        ax.set_yticks(range(len(models)), models, fontsize=7)
        ax.set_title(f"{variant} − standard", fontsize=9)
    fig.colorbar(image, cax=fig.add_subplot(grid_spec[:, 1]), label="accuracy change (pp)")
    fig.suptitle(f"Per-model accuracy change from the standard prompt per pattern (Fig. 20), {name}; "
                 "mean ± sd over selection seeds", fontsize=9)
    return fig
