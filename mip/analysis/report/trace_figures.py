"""Per-ID mention rates of reasoning traces (§5.1.2): Fig. 5 (pooled over patterns, over
the pooled models of :mod:`mip.analysis.report.model_sets`, or one model) and Fig. 21 (per pattern).

Each instance ID is one step of the curve (the paper's bins), red markers at multiples of 50;
the y-axis runs 0–100 % and the x-axis has whole-number ticks.

>>> fig = mention_rates(rates, 2000, 0.55, "pooled over the full-reasoning models a, b")  # doctest: +SKIP
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from mip.experiment.instances import PATTERNS, regions, split_counts, structured  # noqa: E402
from mip.analysis.report.figures import integer_ticks, no_data  # noqa: E402

#: IDs at multiples of this are marked (Fig. 5: "red markers highlighting IDs that are multiples of 50").
MARK_EVERY = 50
STYLES = ("-", "--", ":", "-.")


def mention_rates(rates: pd.DataFrame, n: int, p: float, who: str = "") -> plt.Figure:
    """Fig. 5 / Fig. 21: per-ID mention rate against position, one panel per pattern,
    block boundaries of the structured patterns as grey bands (the curves take the dash styles);
    ``who`` names the models in the title."""
    present = set(rates["pattern"])
    patterns = [x for x in ("all patterns", *PATTERNS) if x in present]
    if not patterns:
        return no_data(f"Per-ID mention rate (n = {n}, p = {p})")
    fig, axes = plt.subplots(len(patterns), 1, figsize=(8, 1.6 * len(patterns) + 0.6), sharex=True, squeeze=False)
    n_maj, n_min = split_counts(n, p)
    # Block boundaries from the one definition of each pattern's layout (mip.experiment.instances.regions).
    bounds = {x: [end for _, end, _ in regions(x, n_maj, n_min)[:-1]] for x in PATTERNS if structured(x)}
    for ax, pattern in zip(axes[:, 0], patterns):
        for k, (model, sub) in enumerate(rates[rates["pattern"] == pattern].groupby("model")):
            # Dashes of their own, so that a curve under another (both at 100 %) still shows.
            ax.plot(sub["position"], 100 * sub["rate"], linewidth=1.0, drawstyle="steps-mid", linestyle=STYLES[k % 4],
                    label=f"{model} ({int(sub['experiments'].iloc[0])} experiments)")
            marked = sub[sub["position"] % MARK_EVERY == 0]
            ax.plot(marked["position"], 100 * marked["rate"], "o", color="red", markersize=2)
        for b in bounds.get(pattern, []):  # solid and faint: the model curves take the dash styles
            ax.axvline(b + 0.5, linestyle="-", linewidth=2.5, color="grey", alpha=0.3)
        ax.set_ylim(-3, 103)  # 0–100 %, a curve on 0 or 100 drawn clear of the frame
        ax.set_yticks([0, 25, 50, 75, 100])
        ax.set_xlim(0.5, n + 0.5)
        integer_ticks(ax.xaxis)
        ax.set_ylabel("mentioned (%)", fontsize=7)
        ax.set_title(pattern.replace("_", "-"), fontsize=8)
        ax.legend(fontsize=6, loc="upper right")
    axes[-1, 0].set_xlabel("instance ID (position in the prompt)")
    marks = f"; red: multiples of {MARK_EVERY}" if n >= MARK_EVERY else ""  # no such ID below n = 50
    fig.suptitle(f"Per-ID mention rate in reasoning traces (n = {n}, p = {p}; grey bands: block boundaries{marks})"
                 + (f", {who}" if who else ""), fontsize=9)
    return fig
