"""The headline table analyze.py prints: per slice (:data:`mip.analysis.slices.SLICE`), valid-only
accuracy per pattern, Δ with its 95 % bootstrap interval, π⁺ and π⁻ with every pattern tied with
them, and the instance sets behind them. Every number comes from :mod:`mip.analysis.stats` and
:mod:`mip.analysis.inference`, as in the report; no two slices are pooled. Printed, it fits
:data:`WIDTH` columns: patterns by short names (a legend says which), ties listed under the table.

    python analyze.py 'results=[results/sweeps/2026-12-01/10-00-00]'

>>> print(render(headline(frame)))       # doctest: +SKIP

Exercised by ``pytest tests/test_readback.py``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable

import pandas as pd

from mip.analysis import inference, pairs, slices, stats
from mip.experiment.instances import PATTERNS

#: The columns after the patterns' accuracies.
GAP = ["Δ (pp)", "Δ 95 % CI", "π⁺", "π⁻", "sets"]
#: The printed headline's width (a terminal's), in characters.
WIDTH = 120
SHORT = stats.SHORT
#: What keeps a slice's row: ``keep(name, records, compute)`` gives ``compute()`` or the row kept for them.
Keep = Callable[[str, pd.DataFrame, Callable[[], dict]], dict]


def headline(frame: pd.DataFrame, keep: Keep | None = None) -> pd.DataFrame:
    """One row per slice: its :data:`~mip.analysis.slices.SLICE` columns, accuracy (%) per pattern in
    the paper's order, then :data:`GAP`; π⁺ and π⁻ name every tied pattern (``a = b``), π⁻ is '–'
    where no pattern is worse. ``keep`` (the report's :meth:`mip.analysis.report.kept_parts.Parts.value`)
    gives a slice's row kept from the last report where its records did not change."""
    if frame.empty:
        return pd.DataFrame(columns=[*slices.SLICE, *GAP])
    keep = keep or (lambda name, records, compute: compute())
    table = pd.DataFrame([keep("headline", sub, lambda: _row(row, sub)) for row, sub in slices.of(frame, slices.SLICE)])
    named = [c for c in table.columns if c not in slices.SLICE and c not in GAP]
    patterns = [p for p in PATTERNS if p in named] + sorted(set(named) - set(PATTERNS))
    return table[[*slices.SLICE, *patterns, *GAP]]


def _row(row: dict, sub: pd.DataFrame) -> dict:
    """The headline's row of one slice (``row``: its slice columns) from its records ``sub``."""
    model = stats.model_table(sub, slices.SLICE).iloc[0]
    best, worst = (model[k] if pd.notna(model[k]) else None for k in ("best", "worst"))
    low = high = math.nan
    # Δ's experiments, those every pattern of the slice holds (the rule of Table 2's Δ), give
    # the per-pattern accuracies beside it too; a slice whose patterns share none shows its own.
    compared = pairs.patterns(sub)
    shown = compared.frame if not compared.empty else sub
    accuracy = stats.pattern_table(shown).set_index("pattern")["acc_mean"]
    if best and worst and best != worst:
        low, high = inference.bootstrap_gap(compared.frame, best, worst)
    best_tied = [p for p in str(model["best_tied"] or "").split(", ") if p]
    worst_tied = stats.worse(best_tied, [p for p in str(model["worst_tied"] or "").split(", ") if p])
    return {**row, **{str(p): round(100 * a, 1) for p, a in accuracy.items()},
            "Δ (pp)": _pp(model["delta"]) + (model["delta_marker"] or ""),
            "Δ 95 % CI": f"[{_pp(low)}, {_pp(high)}]" if not math.isnan(low) else
            "not testable" if best and worst else "–",
            "π⁺": " = ".join(best_tied) or "–", "π⁻": " = ".join(worst_tied) or "–", "sets": int(model["sets"])}


def _pp(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{100 * value:.1f}"


def _short(cell: str) -> str:
    """A π cell printed: the chosen pattern's short name, ``*`` where others tie with it."""
    names = [p for p in str(cell).split(" = ") if p and p != "–"]
    return "–" if not names else SHORT.get(names[0], names[0]) + ("*" if len(names) > 1 else "")


def _columns(shown: pd.DataFrame, width: int) -> list[str]:
    """``shown`` as text columns one space apart, the models left-aligned, the rest right-aligned;
    a model name longer than the room the other columns leave is cut with '…' (it is whole in the
    ties listed under the table and in the report)."""
    cells = {c: [str(v) for v in shown[c]] for c in shown.columns}
    sizes = {c: max(len(str(c)), *(len(v) for v in values)) for c, values in cells.items()}
    room = max(12, width - sum(sizes.values()) - len(sizes))
    names = [m if len(m) <= room else m[:room - 1] + "…" for m in map(str, shown.index)]
    left = max(len(m) for m in names)
    out = [" ".join(["".ljust(left), *(str(c).rjust(sizes[c]) for c in cells)])]
    for i, name in enumerate(names):
        out.append(" ".join([name.ljust(left), *(cells[c][i].rjust(sizes[c]) for c in cells)]))
    return out


def render(table: pd.DataFrame, width: int = WIDTH) -> str:
    """The headline as text, at most ``width`` columns: one block per setting (a slice less its
    model), one row per model; patterns by short names, ties listed under each block."""
    if table.empty:
        return "Headline: no records."
    wrap = lambda text: textwrap.wrap(text, width, subsequent_indent="  ")  # noqa: E731
    lines = wrap("Headline: valid-only accuracy (%) per pattern, mean over selection seeds; Δ = Acc(π⁺) − Acc(π⁻) "
                 f"with its 95 % cluster-bootstrap interval over instance sets (needs {inference.MIN_PAIRS} pairs); "
                 "sets: instance sets with a valid experiment; * a tie, named under the table.")
    present = [p for p in PATTERNS if p in table.columns]
    lines += wrap("Patterns: " + stats.legend(present) + ".")
    for setting, block in slices.of(table, slices.SETTING):
        shown = block.drop(columns=slices.SETTING).dropna(axis=1, how="all").set_index("model")
        ties = [f"  * {model} {side}: {shown.at[model, side]}" for model in shown.index for side in ("π⁺", "π⁻")
                if " = " in str(shown.at[model, side])]
        shown = shown.assign(**{side: shown[side].map(_short) for side in ("π⁺", "π⁻")})
        shown = shown.rename(columns=SHORT).map(lambda v: "–" if isinstance(v, float) and math.isnan(v) else v)
        lines += wrap(f"== {slices.label(setting)}") + _columns(shown, width)
        lines += [t for tie in ties for t in wrap(tie)] + [""]
    return "\n".join(lines).rstrip()
