"""Tables as Markdown, CSV and LaTeX, in the shapes of the paper's tables."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd


def pct(mean: float | None, sd: float | None = None, marker: str = "") -> str:
    """``78.4 ± 3.1`` in percent; ``–`` when undefined."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    text = f"{100 * mean:.1f}"
    if sd is not None and not (isinstance(sd, float) and math.isnan(sd)):
        text += f" ± {100 * sd:.1f}"
    return text + marker


def write_table(frame: pd.DataFrame, folder: Path, name: str) -> list[Path]:
    """``name.md``, ``name.csv`` and ``name.tex`` under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.md", folder / f"{name}.csv", folder / f"{name}.tex"]
    paths[0].write_text(frame.to_markdown(index=False) + "\n", encoding="utf-8")
    frame.to_csv(paths[1], index=False)
    paths[2].write_text(frame.to_latex(index=False, escape=True), encoding="utf-8")
    return paths


def table2(models: pd.DataFrame) -> pd.DataFrame:
    """Table 2 / Table 6: accuracy, Δ and invalid rate per model (valid-only and all-experiment)."""
    extra = {c.capitalize(): models[c] for c in ("budget", "pool", "prompt_variant") if c in models}
    return pd.DataFrame({
        "Model": models["model"],
        **extra,
        "Acc (%)": [pct(m, s) for m, s in zip(models["acc"], models["acc_sd"])],
        "Δ (pp)": [pct(d, s, k) for d, s, k in zip(models["delta"], models["delta_sd"], models["delta_marker"])],
        "π⁺ / π⁻": [f"{b} / {w}" for b, w in zip(models["best"], models["worst"])],
        "Acc_all (%)": [pct(m, s) for m, s in zip(models["acc_all"], models["acc_all_sd"])],
        "Δ_all (pp)": [pct(d, s, k) for d, s, k in zip(models["delta_all"], models["delta_all_sd"], models["delta_all_marker"])],
        "Invalid (%)": [pct(m, s) for m, s in zip(models["invalid_rate"], models["invalid_rate_sd"])],
        "Experiments": models["experiments"],
        "Sets": models["sets"],
        "Rests on": models["rests on"] if "rests on" in models else None,
    })
