"""Position profiles pooled across one condition (App. F.3, F.4): Fig. 33 (one curve per
instance count, pooled over label distributions), Fig. 34 (one per label distribution, pooled
over instance counts) and Fig. 35 (one per prompt variant, pooled over patterns).

Each curve averages 20 relative-position bins of Share (× uniform): replays equally within
each task over the pooled conditions, then the tasks equally (:func:`mip.attribution.profiles.profile`,
App. F.3); every pattern of the replays is in. The compared values are compared on the replays
each of them holds (:func:`mip.analysis.pairs.matched`: the same task, seeds, label, pattern and
every other field but the compared one), and the title counts what was left out. Beside the
curves, the accuracy (%) of the same replays per compared and pooled condition (the paper's
inset). Everything else of the slice (model, budget, strategy, pool, ordering family, and the
prompt variant or (n, p) that is not compared) stays fixed within one figure.

>>> for name, fig, rows in pooled_figures(replays, bins=20):   # doctest: +SKIP
...     save(fig, out / "figures", name)

Exercised by ``pytest tests/test_pooled_profiles.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mip.analysis import pairs, slices  # noqa: E402
from mip.analysis.report.titles import plural  # noqa: E402
from mip.attribution.profile_figures import share_axis  # noqa: E402
from mip.attribution.profiles import profile  # noqa: E402
from mip.experiment.instances import PATTERNS  # noqa: E402

REPRESENTATIVE = ("random", "majority_first", "majority_middle", "majority_last")


@dataclass(frozen=True)
class Pooling:
    figure: str
    compare: str
    """The column with one curve per value."""
    inset: str
    """The inset's other axis: the pooled condition (or the pattern, Fig. 35)."""
    words: str


POOLINGS = (
    Pooling("fig33", "n", "p", "by instance count, pooled over label distributions"),
    Pooling("fig34", "p", "n", "by label distribution, pooled over instance counts"),
    Pooling("fig35", "prompt_variant", "pattern", "by prompt variant, pooled over patterns"),
)


def _fixed(pooling: Pooling) -> list[str]:
    pooled = {"n", "p"} if pooling.compare in ("n", "p") else {"prompt_variant"}
    return ["model", *[c for c in slices.SETTING if c not in pooled]]


def _inset(replays: pd.DataFrame, pooling: Pooling) -> pd.DataFrame:
    table = replays.pivot_table(index=pooling.compare, columns=pooling.inset, values="correct", aggfunc="mean") * 100
    if pooling.inset == "pattern":
        table = table.reindex(columns=[p for p in REPRESENTATIVE if p in table.columns])
    return table


def _comparisons(group: pd.DataFrame, compare: str) -> list[tuple[str, pd.DataFrame, int]]:
    """The replays a figure compares, as the report compares conditions (:func:`mip.analysis.pairs.variant_sets`):
    ``[(file-name suffix, replays, left out)]``. Where every value holds the replays its comparison with the
    reference holds, one figure of them all; else each value against the reference (the standard prompt,
    else the first value) on what those two hold, so a value replayed on other seeds costs only its own curve."""
    values = sorted(group[compare].unique(), key=lambda v: (str(type(v)), v))
    reference = "standard" if "standard" in values else values[0]
    every = pairs.matched(group, compare, within=())
    each = pairs.against(group, compare, reference, within=())
    kept = {i for m in each.values() for i in m.frame.index}
    if len(each) < 2 or (not every.empty and kept <= set(every.frame.index)):
        return [("", every.frame, int(every.counts["dropped"].sum()))]
    return [(f"_{v}", m.frame, int(m.counts["dropped"].sum())) for v, m in each.items()]


def pooled_figures(replays: pd.DataFrame, bins: int = 20,
                   weights: str | None = None) -> list[tuple[str, plt.Figure, list[dict]]]:
    """Each (figure name, figure, curve rows) of Figs. 33–35 the replays support: a group of
    fixed conditions with at least two values of the compared one, compared on the replays
    both hold (:func:`_comparisons`). Titles name the records' model and, where given, the
    model whose ``weights`` attributed them."""
    out = []
    frame = slices.add_columns(replays)
    for pooling in POOLINGS:
        for setting, whole in slices.of(frame, _fixed(pooling)):
            if whole[pooling.compare].nunique() < 2:
                continue
            for suffix, group, dropped in _comparisons(whole, pooling.compare):
                values = sorted(group[pooling.compare].unique(), key=lambda v: (str(type(v)), v))
                if len(values) < 2:
                    continue
                out.append(_figure(pooling, setting, group, values, dropped, suffix, bins, weights))
    return out


def _figure(pooling: Pooling, setting: dict, group: pd.DataFrame, values: list, dropped: int, suffix: str,
            bins: int, weights: str | None) -> tuple[str, plt.Figure, list[dict]]:
    curves = {v: profile(group[group[pooling.compare] == v], "relative", bins=bins) for v in values}
    tag = slices.file_tag(setting, _fixed(pooling))
    held = group[pooling.compare].value_counts()
    rows = [{**setting, pooling.compare: v, "bin": b + 1, "share": float(s), "replays": int(held[v])}
            for v, curve in curves.items() for b, s in enumerate(curve)]
    fixed = [c for c in _fixed(pooling) if c != "model"]
    who = f"{setting['model']} records" + (f", attributed with {weights}'s weights" if weights else "")
    title = (f"IxG profiles {pooling.words} (Fig. {pooling.figure[3:]}): {who}; {slices.label(setting, fixed)}; "
             f"tasks {', '.join(sorted(group['task'].unique()))} averaged equally; patterns "
             f"{', '.join(p for p in PATTERNS if p in set(group['pattern']))}; {plural(len(group), 'replay')}"
             + (f", matched ({plural(dropped, 'replay')} without a twin left out)" if dropped else ""))
    return f"{pooling.figure}_profiles_{tag}{suffix}", _draw(curves, group, pooling, title), rows


def _draw(curves: dict, group: pd.DataFrame, pooling: Pooling, title: str) -> plt.Figure:
    fig, (ax, side) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 1.6]})
    for k, (value, curve) in enumerate(curves.items()):
        x = (np.arange(len(curve)) + 0.5) / len(curve) * 100
        count = int((group[pooling.compare] == value).sum())
        ax.plot(x, curve, marker="o", markersize=3, linewidth=1, linestyle=("-", "--", "-.", ":")[k % 4],
                label=f"{pooling.compare} = {value} ({plural(count, 'replay')})")
    share_axis(ax)
    ax.set_xlim(0, 100)
    ax.set_xlabel(f"relative instance position (%; {len(next(iter(curves.values())))} equal bins)")
    ax.legend(fontsize=6, loc="best")
    inset = _inset(group, pooling)
    side.set_axis_off()
    side.set_title(f"accuracy (%) of these replays,\n{pooling.compare} × {pooling.inset}", fontsize=8)
    cells = [["–" if pd.isna(v) else f"{v:.0f}" for v in row] for row in inset.to_numpy(float)]
    table = side.table(cellText=cells, rowLabels=[str(i) for i in inset.index],
                       colLabels=[str(c).replace("_", "-\n", 1) for c in inset.columns],
                       loc="upper center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    table.scale(1, 1.6)  # room for two-line pattern names
    fig.suptitle(title, fontsize=9)
    return fig
