"""Figures of the paper's shapes with matplotlib: PNG and PDF, labelled axes and units,
legends, and the number of experiments behind each point or cell on the figure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from mip.analysis import stats  # noqa: E402
from mip.analysis.slices import budget_order  # noqa: E402
from mip.experiment.instances import COUNTERPARTS, PATTERNS  # noqa: E402
from mip.analysis.report.titles import fill, fit  # noqa: E402
from mip.experiment.scoring import InvalidKind, Verdict  # noqa: E402

REPRESENTATIVE = ("random", "majority_first", "majority_middle", "majority_last")


#: Resolution of the PNGs, and the widest a figure may be at it (its default size).
DPI, MAX_WIDTH_PX = 150, 2400


def save(fig: plt.Figure, folder: Path, name: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.png", folder / f"{name}.pdf"]
    width = fig.get_figwidth()
    if width * DPI > MAX_WIDTH_PX:  # a figure laid out wider than a page: its height scales with it
        fig.set_size_inches(MAX_WIDTH_PX / DPI, fig.get_figheight() * MAX_WIDTH_PX / DPI / width)
    fit(fig)  # tight layout, long titles wrapped so that none is cut off
    for path in paths:
        fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return paths


def pattern_bars(patterns: pd.DataFrame, which: tuple[str, ...] | None = None, title: str = "") -> plt.Figure:
    """Fig. 2 (four representative patterns) / Fig. 17: accuracy per model and pattern, sd error bars."""
    data = patterns if which is None else patterns[patterns["pattern"].isin(which)]
    if data.empty:
        return no_data(title or "Accuracy by order pattern")
    present = set(data["pattern"].astype(str))
    names = [p for p in (which or PATTERNS) if p in present]
    models = list(dict.fromkeys(data["model"]))  # the table's row order: 20k before 100k
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(models) * max(1, len(names)) / 3 + 2), 4))
    x = np.arange(len(models))
    for i, pattern in enumerate(names):
        sub = data[data["pattern"].astype(str) == pattern].set_index("model").reindex(models)
        bars = ax.bar(x + (i - (len(names) - 1) / 2) * width, 100 * sub["acc_mean"], width,
                      yerr=100 * sub["acc_sd"].fillna(0), capsize=2, label=pattern.replace("_", "-"))
        for bar, count, acc in zip(bars, sub["valid"], sub["acc_mean"]):
            if pd.isna(acc):  # no valid experiment: say so, so that a missing bar is not read as 0 %
                ax.annotate("n/a", (bar.get_x() + bar.get_width() / 2, 1), ha="center", fontsize=6, rotation=90,
                            color="grey")
            elif acc == 0:  # a 0 % bar has no height: say it, so it is not read as missing
                ax.annotate(f"0% ({int(count)})", (bar.get_x() + bar.get_width() / 2, 1), ha="center", fontsize=6,
                            rotation=90)
            elif pd.notna(count):
                ax.annotate(f"{int(count)}", (bar.get_x() + bar.get_width() / 2, 1), ha="center", fontsize=6,
                            rotation=90)
    ax.set_xticks(x, models, rotation=30, ha="right")
    ax.set_ylabel("valid-only accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title or "Accuracy by order pattern\n"
                 "(error bars: sd over selection seeds; numbers: valid experiments)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _slot(patterns: tuple[str, ...]) -> str:
    """``first|last`` for (majority_first, majority_last): a short label of one slot of Fig. 18."""
    return "|".join(p.replace("soft_majority_", "s.").replace("majority_", "") for p in patterns)


def counterpart_pairs(by_task: pd.DataFrame, title: str = "Counterpart pairs") -> plt.Figure | Missing:
    """Fig. 18: task accuracy on all seven patterns, each counterpart pair overlaid at one slot
    (bar: the first of the pair, diamond: its counterpart), random as the first slot; one row of
    panels per model (slice), one panel per task; error bars: sd over selection seeds. The
    numbers under each slot's name are the pair's accuracies (%), so that a value of 0 is read as 0."""
    if by_task.empty:
        return no_data(title)
    models, tasks = list(dict.fromkeys(by_task["model"])), sorted(by_task["task"].unique())
    slots = [("random",), *COUNTERPARTS]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(len(models), len(tasks), figsize=(2.5 * len(tasks) + 2.5, 2.4 * len(models) + 0.9),
                             sharey=True, squeeze=False)
    for r, model in enumerate(models):
        for c, task in enumerate(tasks):
            ax, sub = axes[r, c], by_task[(by_task["model"] == model) & (by_task["task"] == task)]
            sub, labels = sub.set_index(sub["pattern"].astype(str)).reindex(PATTERNS), []
            for x, slot in enumerate(slots):
                acc, sd = 100 * sub.loc[list(slot), "acc_mean"], 100 * sub.loc[list(slot), "acc_sd"]
                ax.bar(x, acc.iloc[0] if pd.notna(acc.iloc[0]) else 0, 0.6, yerr=np.nan_to_num(sd.iloc[0]), capsize=2,
                       color=colours[x], alpha=0.8, label=slot[0].replace("_", "-"))
                if len(slot) > 1:
                    ax.errorbar(x, acc.iloc[1], yerr=np.nan_to_num(sd.iloc[1]), fmt="D", color="black", mfc="white",
                                markersize=5, capsize=2, label=f"{slot[1].replace('_', '-')} (◇)")
                labels.append(_slot(slot) + "\n" + " | ".join("n/a" if pd.isna(a) else f"{a:.0f}" for a in acc))
            ax.set_xticks(range(len(slots)), labels, fontsize=5)
            ax.set_ylim(0, 105)
            ax.set_title(f"{model} · {task}", fontsize=8)
        axes[r, 0].set_ylabel("valid-only accuracy (%)", fontsize=7)
    axes[0, -1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(title, fontsize=9)
    return fig


@dataclass(frozen=True)
class Later:
    """A figure handed to the report undrawn: ``draw(*args, **kwargs)`` makes it when the report needs
    it (not where the last report's is kept: what it is drawn from keys it, mip.analysis.report.kept_figures)."""

    draw: Callable
    args: tuple
    kwargs: dict

    def __call__(self) -> plt.Figure | Missing:
        return self.draw(*self.args, **self.kwargs)


def later(draw: Callable) -> Callable[..., Later]:
    """``later(heatmap)(table, title, …)``: what ``heatmap(table, title, …)`` draws, drawn when the report needs it.

    >>> later(no_data)("Fig. 2")()
    Missing(reason='Fig. 2: no data to draw.')
    """
    return lambda *args, **kwargs: Later(draw, args, kwargs)


@dataclass(frozen=True)
class Missing:
    """A figure that is not drawn, and why: the report prints the reason where the figure
    would be, so that no empty panel is ever read as a result."""

    reason: str


def no_data(title: str) -> Missing:
    """What a figure function returns when its slice has nothing to draw."""
    return Missing(f"{title}: no data to draw.")


def integer_ticks(axis) -> None:
    """Instance IDs and counts are whole numbers: no tick at 2.5."""
    axis.set_major_locator(MaxNLocator(integer=True))


def heatmap(table: pd.DataFrame, title: str, value_label: str, counts: pd.DataFrame | None = None,
            fmt: str = "{:.0f}", scale: float = 100.0, cmap: str = "viridis", sd: pd.DataFrame | None = None,
            extra: pd.DataFrame | None = None, extra_fmt: str = "({:.0f})") -> plt.Figure:
    """A labelled heatmap; each cell shows its value, ``± sd`` and ``extra`` where given, and
    the experiments behind it. Cells without a value are left blank and say "n/a". Percentages
    (``scale`` 100) run 0–100; counts (``scale`` 1) start at 0 with whole-number ticks, so that
    a count of zero takes the colour map's lightest, neutral colour, whatever the others are."""
    if table.empty:
        return no_data(title)
    fig, ax = plt.subplots(figsize=(1.1 * table.shape[1] + 2.5, 0.55 * table.shape[0] + 1.8))
    values = table.to_numpy(float) * scale
    top = scale if scale == 100.0 else max(1.0, float(np.nanmax(values)) if np.isfinite(values).any() else 1.0)
    colours = plt.get_cmap(cmap).with_extremes(bad="#d9d9d9")  # a missing cell is grey, never read as a 0
    image = ax.imshow(values, cmap=colours, aspect="auto", vmin=0, vmax=top)
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index], fontsize=7)
    for (r, c), v in np.ndenumerate(values):
        if np.isnan(v):
            ax.text(c, r, "n/a", ha="center", va="center", fontsize=6, color="grey")
        else:
            label = _shown(v, fmt, scale)
            if sd is not None and pd.notna(sd.iat[r, c]):
                label += f" ± {sd.iat[r, c] * scale:.0f}"
            if extra is not None and pd.notna(extra.iat[r, c]):
                label += "\n" + extra_fmt.format(extra.iat[r, c])
            label += f"\n(n={int(counts.iat[r, c])})" if counts is not None and pd.notna(counts.iat[r, c]) else ""
            red, green, blue, _ = image.cmap(image.norm(v))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(c, r, label, ha="center", va="center", fontsize=6, color="white" if dark else "black")
    bar = fig.colorbar(image, ax=ax, label=value_label)
    if scale != 100.0:
        integer_ticks(bar.ax.yaxis)
    if table.columns.name or table.index.name:
        ax.set_xlabel(str(table.columns.name or ""), fontsize=8)
        ax.set_ylabel(str(table.index.name or ""), fontsize=8)
    # Wrapped to the figure's width, so that a long slice name is never cut off.
    ax.set_title(fill(title, max(30, int(fig.get_figwidth() * 9))), fontsize=9)
    return fig


def _shown(value: float, fmt: str, scale: float) -> str:
    """A cell's value; a percentage below 10 keeps two significant digits (0.45 % is not "0", 4.5 % not "4").

    >>> [_shown(value, "{:.0f}", 100.0) for value in (0.45, 4.5, 0.0, 63.2)]
    ['0.45', '4.5', '0', '63']
    """
    if scale == 100.0 and 0 < abs(value) < 10:
        return f"{value:.2g}"
    return fmt.format(value)


def error_kinds(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """Fig. 14's kinds: which experiments of ``frame`` are mistakes, and which invalid by each kind."""
    invalid = (InvalidKind.PARSE, InvalidKind.TRUNCATED, InvalidKind.INPUT_OVERFLOW)
    return {Verdict.INCORRECT: frame["verdict"] == Verdict.INCORRECT,
            **{k: frame["invalid_kind"] == k for k in invalid}}


def error_types(frame: pd.DataFrame,
                title: str = "Error types per model (mistakes and invalid outputs by kind)") -> plt.Figure:
    """Fig. 14: share of experiments per model that are mistakes or invalid, by kind."""
    shares = pd.DataFrame(error_kinds(frame)).groupby(frame["model"]).mean()
    counts = frame.groupby("model").size()
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(shares)), 4))
    bottom = np.zeros(len(shares))
    for kind in shares.columns:
        ax.bar(shares.index, 100 * shares[kind], bottom=bottom, label=kind)
        bottom += 100 * shares[kind].to_numpy()
    ax.set_xticks(range(len(shares)), [f"{model}\n(n={counts[model]})" for model in shares.index])
    ax.set_ylim(0, 100)  # a rate axis runs 0–100; the experiments behind each bar are under its name
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("share of experiments (%)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax.tick_params(axis="x", rotation=30)
    return fig


def budget_outcomes(frame: pd.DataFrame, accuracy: pd.DataFrame, title: str) -> plt.Figure:
    """Fig. 9: per pattern and budget, the shares of all experiments that are correct,
    incorrect and invalid (stacked), with the mean valid-only accuracy over seeds above."""
    if frame.empty:
        return no_data(title)
    present = set(frame["pattern"])
    names = [p for p in PATTERNS if p in present]
    budgets_ = budget_order(frame["budget"])
    width = 0.8 / len(budgets_)
    fig, ax = plt.subplots(figsize=(max(7, 0.8 * len(names) * len(budgets_) + 2), 4))
    outcome = frame["verdict"].where(frame["valid"], Verdict.INVALID)
    colours = {Verdict.CORRECT: "tab:green", Verdict.INCORRECT: "tab:orange", Verdict.INVALID: "tab:grey"}
    for j, budget in enumerate(budgets_):
        sub = frame[frame["budget"] == budget]
        shares = pd.crosstab(sub["pattern"], outcome[sub.index], normalize="index").reindex(names).fillna(0) * 100
        x = np.arange(len(names)) + (j - (len(budgets_) - 1) / 2) * width
        bottom = np.zeros(len(names))
        for kind, colour in colours.items():
            values = shares[kind].to_numpy() if kind in shares else np.zeros(len(names))
            ax.bar(x, values, width, bottom=bottom, color=colour, edgecolor="white", hatch="//" if j else None,
                   label=f"{kind} ({budget})")
            bottom += values
        acc = accuracy[accuracy["budget"] == budget].set_index("pattern").reindex(names)["acc_mean"]
        for xi, a in zip(x, acc):  # just above the frame: the axis itself stops at 100
            ax.annotate("n/a" if pd.isna(a) else f"{100 * a:.0f}", (xi, 101), ha="center", fontsize=6,
                        annotation_clip=False)
    ax.set_xticks(range(len(names)), [n.replace("_", "-") for n in names], rotation=30, ha="right")
    ax.set_ylabel("share of all experiments (%)")
    ax.set_ylim(0, 100)
    # Padded above the accuracy numbers, which sit just over the frame.
    ax.set_title(fill(title + " (numbers: mean valid-only accuracy over seeds)", 110), fontsize=9, pad=12)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def budgets(table: pd.DataFrame, title: str = "Output-token budgets compared") -> plt.Figure:
    """Fig. 9–11: each metric's accuracy (valid-only, all-experiment, …) and the invalid rate per budget."""
    metrics = [(f"acc{m.suffix}", m.label) for m in stats.METRICS.values()] + [("invalid_rate", "invalid rate")]
    if table.empty:
        return no_data("Output-token budgets compared")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.5))
    budgets_ = budget_order(table["budget"])
    models = sorted(table["model"].unique())
    width = 0.8 / len(budgets_)
    for ax, (column, label) in zip(axes, metrics):
        for j, budget in enumerate(budgets_):
            sub = table[table["budget"] == budget].set_index("model").reindex(models)
            values = 100 * pd.to_numeric(sub[column], errors="coerce")
            bars = ax.bar(np.arange(len(models)) + (j - (len(budgets_) - 1) / 2) * width, values.fillna(0), width,
                          label=budget)
            # The value above each bar: a 0 % bar is then told apart from a missing one ("n/a").
            ax.bar_label(bars, labels=["n/a" if pd.isna(v) else f"{v:.1f}" for v in values], fontsize=6)
        ax.set_ylim(0, 100)  # a rate axis runs 0–100; a label over a full bar sits just above the frame
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
        ax.set_ylabel(f"{label} (%)")
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} (experiments per bar in the table of the same name)", fontsize=9)
    return fig


