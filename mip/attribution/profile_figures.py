"""Profile figures of Share (× uniform): log y axis, dotted uniform reference at 1,
majority / minority / alternating regions shaded, accuracy of the same outputs in the title."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from mip.analysis.report.titles import plural, tasks_of  # noqa: E402
from mip.experiment.instances import regions, split_counts, structured  # noqa: E402

COLOURS = {"majority": "#9ecae1", "minority": "#fdae6b", "alternating": "#d9d9d9", "mixed": "#ffffff"}


def share_axis(ax: plt.Axes) -> None:
    """A y axis of IxG shares as multiples of the uniform share: log scale, plain tick labels, a
    dotted line at 1 (the uniform share)."""
    ax.axhline(1.0, linestyle=":", color="grey", label="uniform")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")  # 0.5, 1, 2 rather than 5×10⁻¹
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=6)
    ax.set_ylabel("share (× uniform)")


def profile_figure(curve: np.ndarray, bin_size: int, pattern: str, n: int, p: float, replays: pd.DataFrame,
                   weights: str | None = None) -> plt.Figure:
    """One pattern's IxG profile; the title names the records' model, the model whose ``weights``
    attributed them (where given), the tasks, the pattern, n, p and the replays behind the curve."""
    fig, ax = plt.subplots(figsize=(8, 3))
    x = (np.arange(len(curve)) * bin_size) + (bin_size + 1) / 2
    if structured(pattern):  # a registered pattern with a block layout: its regions shaded
        n_maj, n_min = split_counts(n, p)
        for start, end, kind in regions(pattern, n_maj, n_min):
            ax.axvspan(start + 0.5, end + 0.5, color=COLOURS[kind], alpha=0.5, linewidth=0, label=kind)
    ax.plot(x, curve, marker="o", markersize=2, linewidth=1, color="black")
    share_axis(ax)
    ax.set_xlim(0.5, n + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # instance positions are whole numbers
    ax.set_xlabel(f"instance position (points average {plural(bin_size, 'consecutive instance')})")
    accuracy = 100 * replays["correct"].mean()
    records = ", ".join(sorted(map(str, replays["model"].unique()))) if "model" in replays else "?"
    who = f"{records} records, attributed with {weights}'s weights" if weights else f"{records} records"
    ax.set_title(f"IxG profile — {who}; {tasks_of(replays)}; {pattern.replace('_', '-')}, n = {n}, p = {p}: "
                 f"{plural(len(replays), 'replay')}, accuracy {accuracy:.0f} %", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper right")
    return fig
