"""Figures of the paper's shapes with matplotlib: PNG and PDF, labelled axes and units,
legends, and the number of experiments behind each point or cell on the figure."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mip import stats  # noqa: E402
from mip.instances import COUNTERPARTS, PATTERNS, regions, split_counts, structured  # noqa: E402
from mip.report.titles import fit  # noqa: E402
from mip.scoring import InvalidKind, Verdict  # noqa: E402

REPRESENTATIVE = ("random", "majority_first", "majority_middle", "majority_last")


def save(fig: plt.Figure, folder: Path, name: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.png", folder / f"{name}.pdf"]
    fit(fig)  # tight layout, long titles wrapped so that none is cut off
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def pattern_bars(patterns: pd.DataFrame, which: tuple[str, ...] | None = None, title: str = "") -> plt.Figure:
    """Fig. 2 (four representative patterns) / Fig. 17: accuracy per model and pattern, sd error bars."""
    data = patterns if which is None else patterns[patterns["pattern"].isin(which)]
    if data.empty:
        return no_data(title or "Accuracy by order pattern")
    present = set(data["pattern"].astype(str))
    names = [p for p in (which or PATTERNS) if p in present]
    models = sorted(data["model"].unique())
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
                ax.annotate(f"{int(count)}", (bar.get_x() + bar.get_width() / 2, 1), ha="center", fontsize=6, rotation=90)
    ax.set_xticks(x, models, rotation=30, ha="right")
    ax.set_ylabel("valid-only accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title or "Accuracy by order pattern\n(error bars: sd over selection seeds; numbers: valid experiments)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def counterpart_pairs(patterns: pd.DataFrame) -> plt.Figure:
    """Fig. 18: each counterpart pair's accuracies overlaid per model, with random as reference."""
    if patterns.empty:
        return no_data("Counterpart pairs")
    models = sorted(patterns["model"].unique())
    fig, axes = plt.subplots(1, len(COUNTERPARTS), figsize=(4 * len(COUNTERPARTS), 3.5), sharey=True)
    for ax, pair in zip(np.atleast_1d(axes), COUNTERPARTS):
        for pattern, marker in zip(("random", *pair), ("s", "o", "x")):
            sub = patterns[patterns["pattern"].astype(str) == pattern].set_index("model").reindex(models)
            ax.errorbar(range(len(models)), 100 * sub["acc_mean"], yerr=100 * sub["acc_sd"].fillna(0), fmt=marker,
                        capsize=2, label=pattern.replace("_", "-"))
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right", fontsize=7)
        ax.set_title(" vs ".join(p.replace("_", "-") for p in pair), fontsize=9)
        ax.legend(fontsize=6)
    np.atleast_1d(axes)[0].set_ylabel("valid-only accuracy (%)")
    return fig


def no_data(title: str) -> plt.Figure:
    """A figure that says it has nothing to show (a slice without valid experiments)."""
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color="grey", transform=ax.transAxes)
    ax.set_axis_off()
    ax.set_title(title, fontsize=9)
    return fig


def heatmap(table: pd.DataFrame, title: str, value_label: str, counts: pd.DataFrame | None = None,
            fmt: str = "{:.0f}", scale: float = 100.0, cmap: str = "viridis", sd: pd.DataFrame | None = None,
            extra: pd.DataFrame | None = None, extra_fmt: str = "({:.0f})") -> plt.Figure:
    """A labelled heatmap; each cell shows its value, ``± sd`` and ``extra`` where given, and
    the experiments behind it. Cells without a value are left blank and say "n/a"."""
    if table.empty:
        return no_data(title)
    fig, ax = plt.subplots(figsize=(1.1 * table.shape[1] + 2.5, 0.55 * table.shape[0] + 1.8))
    values = table.to_numpy(float) * scale
    image = ax.imshow(values, cmap=cmap, aspect="auto", vmin=0, vmax=scale if scale == 100.0 else None)
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index], fontsize=7)
    for (r, c), v in np.ndenumerate(values):
        if np.isnan(v):
            ax.text(c, r, "n/a", ha="center", va="center", fontsize=6, color="grey")
        else:
            label = fmt.format(v)
            if sd is not None and pd.notna(sd.iat[r, c]):
                label += f" ± {sd.iat[r, c] * scale:.0f}"
            if extra is not None and pd.notna(extra.iat[r, c]):
                label += "\n" + extra_fmt.format(extra.iat[r, c])
            label += f"\n(n={int(counts.iat[r, c])})" if counts is not None and pd.notna(counts.iat[r, c]) else ""
            red, green, blue, _ = image.cmap(image.norm(v))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(c, r, label, ha="center", va="center", fontsize=6, color="white" if dark else "black")
    fig.colorbar(image, ax=ax, label=value_label)
    if table.columns.name or table.index.name:
        ax.set_xlabel(str(table.columns.name or ""), fontsize=8)
        ax.set_ylabel(str(table.index.name or ""), fontsize=8)
    # Wrapped to the figure's width, so that a long slice name is never cut off.
    ax.set_title(textwrap.fill(title, max(30, int(fig.get_figwidth() * 9))), fontsize=9)
    return fig


def error_types(frame: pd.DataFrame) -> plt.Figure:
    """Fig. 14: share of experiments per model that are mistakes or invalid, by kind."""
    kinds = {Verdict.INCORRECT: frame["verdict"] == Verdict.INCORRECT,
             **{k: frame["invalid_kind"] == k for k in (InvalidKind.PARSE, InvalidKind.TRUNCATED, InvalidKind.INPUT_OVERFLOW)}}
    shares = pd.DataFrame({k: v for k, v in kinds.items()}).groupby(frame["model"]).mean()
    counts = frame.groupby("model").size()
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(shares)), 4))
    bottom = np.zeros(len(shares))
    for kind in shares.columns:
        ax.bar(shares.index, 100 * shares[kind], bottom=bottom, label=kind)
        bottom += 100 * shares[kind].to_numpy()
    for i, model in enumerate(shares.index):
        ax.annotate(f"n={counts[model]}", (i, bottom[i] + 1), ha="center", fontsize=7)
    ax.set_ylim(0, 1.15 * max(bottom.max(), 1) + 2)  # room for each "n=": one outside the axes is not drawn
    ax.set_ylabel("share of experiments (%)")
    ax.set_title("Error types per model (mistakes and invalid outputs by kind)")
    ax.legend(fontsize=7)
    ax.tick_params(axis="x", rotation=30)
    return fig


def variant_deltas(deltas: pd.DataFrame) -> plt.Figure:
    """Fig. 20: accuracy difference of each prompt variant from the standard prompt."""
    models = sorted(deltas["model"].unique())
    variants = sorted(deltas["prompt_variant"].unique())
    width = 0.8 / max(1, len(variants))
    fig, ax = plt.subplots(figsize=(max(5, len(models) * 1.2), 4))
    for i, variant in enumerate(variants):
        sub = deltas[deltas["prompt_variant"] == variant].set_index("model").reindex(models)
        ax.bar(np.arange(len(models)) + (i - (len(variants) - 1) / 2) * width, 100 * sub["delta_mean"], width,
               yerr=100 * sub["delta_sd"].fillna(0), capsize=2, label=f"{variant} (seeds: {int(sub['seeds'].max())})")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
    ax.set_ylabel("accuracy − standard prompt (pp)")
    ax.set_title("Prompt variants against the standard prompt (sd over seeds)")
    ax.legend(fontsize=7)
    return fig


def variant_panels(table: pd.DataFrame) -> plt.Figure:
    """Fig. 4: accuracy (top) and Δ (bottom) per model and prompt variant, one bar group per
    model and budget; sd over selection seeds; "n/a" where a value is undefined."""
    if table.empty:
        return no_data("Prompt variants")
    rows = table.assign(group=table["model"] + " · " + table["budget"].astype(str))
    groups = sorted(rows["group"].unique())
    present = set(rows["prompt_variant"])
    variants = [v for v in ("standard", "hint", "strategy", "self_prompt") if v in present]
    variants += sorted(set(rows["prompt_variant"]) - set(variants))
    width = 0.8 / max(1, len(variants))
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 1.5 * len(groups) + 2), 6), sharex=True)
    for ax, (column, sd, label) in zip(axes, [("acc", "acc_sd", "valid-only accuracy (%)"), ("delta", "delta_sd", "Δ best−worst (pp)")]):
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
    axes[0].set_title("Prompt variants: accuracy (top) and best–worst gap (bottom); error bars: sd over seeds", fontsize=9)
    return fig


def budget_outcomes(frame: pd.DataFrame, accuracy: pd.DataFrame, title: str) -> plt.Figure:
    """Fig. 9: per pattern and budget, the shares of all experiments that are correct,
    incorrect and invalid (stacked), with the mean valid-only accuracy over seeds above."""
    if frame.empty:
        return no_data(title)
    present = set(frame["pattern"])
    names = [p for p in PATTERNS if p in present]
    budgets_ = sorted(frame["budget"].unique())
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
        for xi, a in zip(x, acc):
            ax.annotate("n/a" if pd.isna(a) else f"{100 * a:.0f}", (xi, 101), ha="center", fontsize=6)
    ax.set_xticks(range(len(names)), [n.replace("_", "-") for n in names], rotation=30, ha="right")
    ax.set_ylabel("share of all experiments (%)")
    ax.set_ylim(0, 110)
    ax.set_title(textwrap.fill(title + " (numbers: mean valid-only accuracy over seeds)", 110), fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def budgets(table: pd.DataFrame) -> plt.Figure:
    """Fig. 9–11: each metric's accuracy (valid-only, all-experiment, …) and the invalid rate per budget."""
    metrics = [(f"acc{m.suffix}", m.label) for m in stats.METRICS.values()] + [("invalid_rate", "invalid rate")]
    if table.empty:
        return no_data("Output-token budgets compared")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.5))
    budgets_ = sorted(table["budget"].unique())
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
        ax.set_ylim(0, 110)
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
        ax.set_ylabel(f"{label} (%)")
        ax.legend(fontsize=7)
    fig.suptitle("Output-token budgets compared (experiments per bar in the table of the same name)")
    return fig


def mention_rates(rates: pd.DataFrame, n: int, p: float) -> plt.Figure:
    """Fig. 5 / Fig. 21: per-ID mention rate against position, one panel per pattern,
    block boundaries of the structured patterns dotted."""
    present = set(rates["pattern"])
    patterns = [x for x in ("all patterns", *PATTERNS) if x in present]
    if not patterns:
        return no_data(f"Per-ID mention rate (n = {n}, p = {p})")
    fig, axes = plt.subplots(len(patterns), 1, figsize=(8, 1.6 * len(patterns) + 0.5), sharex=True, squeeze=False)
    n_maj, n_min = split_counts(n, p)
    # Block boundaries from the one definition of each pattern's layout (mip.instances.regions).
    bounds = {x: [end for _, end, _ in regions(x, n_maj, n_min)[:-1]] for x in PATTERNS if structured(x)}
    for ax, pattern in zip(axes[:, 0], patterns):
        for model, sub in rates[rates["pattern"] == pattern].groupby("model"):
            ax.plot(sub["position"], 100 * sub["rate"], linewidth=0.8, label=f"{model} (n={int(sub['experiments'].iloc[0])})")
        for b in bounds.get(pattern, []):
            ax.axvline(b + 0.5, linestyle=":", color="grey")
        ax.set_ylabel("mentioned (%)", fontsize=7)
        ax.set_title(pattern.replace("_", "-"), fontsize=8)
        ax.legend(fontsize=6)
    axes[-1, 0].set_xlabel("instance ID (position in the prompt)")
    fig.suptitle(f"Per-ID mention rate in reasoning traces (n = {n}, p = {p}; dotted: block boundaries)", fontsize=9)
    return fig


def position_errors(frame: pd.DataFrame, bins: int = 20) -> plt.Figure:
    """Decomposed strategy: the share of wrong instance labels by relative position, per pattern."""
    present = set(frame["pattern"])
    patterns = [p for p in PATTERNS if p in present]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for pattern in patterns:
        rows = []
        for errors in frame[frame["pattern"] == pattern]["position_errors"]:
            values = np.array([np.nan if e is None else e for e in errors], dtype=float)
            edges = np.linspace(0, len(values), min(bins, len(values)) + 1).round().astype(int)
            rows.append([np.nanmean(values[a:b]) if b > a and not np.isnan(values[a:b]).all() else np.nan
                         for a, b in zip(edges[:-1], edges[1:])])
        width = min(len(r) for r in rows)
        curve = np.nanmean(np.array([r[:width] for r in rows]), axis=0)
        ax.plot((np.arange(width) + 0.5) / width * 100, 100 * curve, marker="o", markersize=2,
                label=f"{pattern.replace('_', '-')} (n={len(rows)})")
    ax.set_xlabel("relative position in the prompt (%)")
    ax.set_ylabel("wrong instance labels (%)")
    ax.set_title("Decomposed strategy: instance error rate by position", fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
