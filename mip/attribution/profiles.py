"""Position profiles of Share (× uniform) (App. F.1–F.3) and where attribution falls.

Profiles average replays equally within each task, then tasks equally (App. F.3).

>>> binned([1.0, 2.0, 3.0, 4.0, 5.0], bin_size=2)    # instances 1-2, 3-4, then 5 alone
array([1.5, 3.5, 5. ])
>>> relative([1.0, 3.0, 1.0, 3.0], bins=2)           # each half of the prompt
array([2., 2.])

Exercised by ``pytest tests/test_attribution.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mip.experiment.instances import regions, split_counts


def binned(share: list[float], bin_size: int) -> np.ndarray:
    """Mean share over consecutive bins of ``bin_size`` instances (the last may be shorter)."""
    values = np.asarray(share, dtype=float)
    return np.array([values[i:i + bin_size].mean() for i in range(0, len(values), bin_size)])


def relative(share: list[float], bins: int = 20) -> np.ndarray:
    """Mean share over ``bins`` equal relative-position bins (N/bins instances each)."""
    values = np.asarray(share, dtype=float)
    edges = np.linspace(0, len(values), bins + 1).round().astype(int)
    return np.array([values[a:b].mean() if b > a else np.nan for a, b in zip(edges[:-1], edges[1:])])


def profile(replays: pd.DataFrame, kind: str = "binned", bin_size: int = 10, bins: int = 20) -> np.ndarray:
    """One curve: per replay binned shares, averaged within each task, then over tasks."""
    curves = []
    for _, group in replays.groupby("task"):
        rows = [binned(s, bin_size) if kind == "binned" else relative(s, bins) for s in group["share"]]
        curves.append(np.nanmean(np.vstack(rows), axis=0))
    return np.nanmean(np.vstack(curves), axis=0)


def region_shares(replays: pd.DataFrame) -> pd.DataFrame:
    """Beyond the paper: per pattern and label region, the share of attribution it gets
    against its share of instances, and the mean signed contribution of its instances —
    the direct test of "less weight on the middle majority block"."""
    rows = []
    for (pattern, n, p), group in replays.groupby(["pattern", "n", "p"]):
        n_maj, n_min = split_counts(int(n), float(p))
        for index, (start, end, kind) in enumerate(regions(pattern, n_maj, n_min)):
            attribution, signed = [], []
            for share, sign in zip(group["share"], group["signed"]):
                share = np.asarray(share)
                attribution.append(share[start:end].sum() / share.sum())
                signed.append(float(np.mean(sign[start:end])))
            rows.append({"pattern": pattern, "n": n, "p": p, "region": index, "kind": kind, "first": start + 1,
                         "last": end, "instance_share": (end - start) / int(n),
                         "attribution_share": float(np.mean(attribution)), "mean_signed": float(np.mean(signed)),
                         "replays": len(group)})
    return pd.DataFrame(rows)
