"""The paper's metrics (§3.4, App. D.1–D.2) and honest statistics on top of them.

All functions take the analysis table of :mod:`mip.results` and are pure.

- Valid-only accuracy per selection seed: correct / valid, pooled over tasks, majority
  labels and patterns (random over its order seeds); mean ± standard deviation (ddof = 1)
  over seeds.
- All-experiment accuracy (invalid counts as wrong) and invalid rate by kind. The accuracy
  metrics are registered in :data:`METRICS`.
- Best and worst pattern π⁺, π⁻ by mean accuracy; Δ = mean over seeds of
  Acc_s(π⁺) − Acc_s(π⁻) with the sd of the paired differences. A seed without a valid
  experiment of either pattern drops out of the pairing; Δ is marked † with one paired
  seed and ‡ with two.
- Beyond the paper: cluster-bootstrap intervals over instance sets, a paired test between
  two patterns on matched instance sets, and the App. C.4 reference calculation, exact.

>>> reference_calculation(2000, 0.55, 0.9)["expected"]
1080.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mip.instances import PATTERNS
from mip.scoring import InvalidKind

#: An instance set: the experiments that share a selection (seed, task, majority label, n, p).
INSTANCE_SET = ["model", "seed", "task", "majority_label", "n", "p", "prompt_variant", "budget"]

#: mip's own tests and intervals (beyond the paper) need this many paired instance sets:
#: with fewer, a two-sided exact test (McNemar, sign flips) cannot reach p < 0.05 even when
#: every pair agrees (its smallest p is 2 / 2^pairs = 0.0625 at 5 pairs).
MIN_PAIRS = 6


def _rate(num: pd.Series, den: pd.Series) -> pd.Series:
    return num / den.where(den > 0)


@dataclass(frozen=True)
class Metric:
    """An accuracy metric: a rate per selection seed from one group's counts (columns
    ``correct``, ``valid``, ``experiments``; undefined where it divides by 0), averaged over
    seeds. Table 2 reports its mean ± sd and its Δ between π⁺ and π⁻ (:func:`model_table`)."""

    suffix: str
    """Its columns: ``acc<suffix>``, ``acc<suffix>_sd``, ``delta<suffix>`` … (the first metric's: none)."""
    label: str
    rate: Callable[[pd.DataFrame], pd.Series]


#: The accuracy metrics, the paper's first: valid-only (§3.4) and all-experiment, invalid
#: counting as wrong (App. D.1–D.2). A new metric is one entry here: Table 2 and its numbers get
#: its accuracy and Δ, the budgets figure a panel.
METRICS: dict[str, Metric] = {
    "valid_only": Metric("", "valid-only accuracy", lambda c: _rate(c["correct"], c["valid"])),
    "all": Metric("_all", "all-experiment accuracy", lambda c: _rate(c["correct"], c["experiments"])),
}


def per_seed(frame: pd.DataFrame, by: Sequence[str] = ("model",), metric: str = "valid_only") -> pd.DataFrame:
    """Accuracy per seed within each group ``by`` by one of :data:`METRICS`: columns ``acc``,
    ``correct``, ``valid``, ``experiments``."""
    if metric not in METRICS:
        raise ValueError(f"Unknown metric {metric!r}; choose one of {', '.join(METRICS)}.")
    keys = [*by, "seed"]
    g = frame.groupby(keys, dropna=False)
    # ``experiments`` present: counts already summed per cell (model_table's sufficient statistics).
    size = g["experiments"].sum() if "experiments" in frame else g.size()
    out = pd.DataFrame({"correct": g["correct"].sum(), "valid": g["valid"].sum(), "experiments": size})
    out["acc"] = METRICS[metric].rate(out)
    return out.reset_index()


def accuracy(frame: pd.DataFrame, by: Sequence[str] = ("model",), metric: str = "valid_only") -> pd.DataFrame:
    """Mean and sd over seeds of per-seed accuracy, with the counts behind them."""
    seeds = per_seed(frame, by, metric)
    g = seeds.groupby(list(by), dropna=False)
    return pd.DataFrame({
        "acc_mean": g["acc"].mean(),
        "acc_sd": g["acc"].std(ddof=1),
        "seeds": g["acc"].count(),
        "valid": g["valid"].sum(),
        "experiments": g["experiments"].sum(),
    }).reset_index()


def invalid_rates(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Invalid rate overall and by kind (input_overflow, parse, truncated), per group."""
    kinds = [kind.value for kind in InvalidKind]
    g = frame.assign(**{k: frame["invalid_kind"] == k for k in kinds}, invalid=~frame["valid"]).groupby(list(by), dropna=False)
    out = g[["invalid", *kinds]].mean().add_suffix("_rate")
    out["experiments"] = g.size()
    return out.reset_index()


@dataclass
class Gap:
    best: str | None
    worst: str | None
    delta: float | None
    sd: float | None
    paired_seeds: int
    marker: str
    """'†' for one paired seed, '‡' for two, '' otherwise."""


def best_worst_gap(frame: pd.DataFrame, metric: str = "valid_only") -> Gap:
    """π⁺, π⁻ and Δ for one model's experiments (§3.4; App. D.2 for ``metric='all'``)."""
    seeds = per_seed(frame, ["pattern"], metric)
    means = seeds.groupby("pattern")["acc"].mean().dropna()
    if len(means) < 2:  # a gap needs two patterns with valid experiments
        return Gap(None, None, None, None, 0, "")
    # π⁻ is the worst of the *other* patterns: when all tie, π⁺ ≠ π⁻ and Δ = 0 is still a comparison.
    best = means.idxmax()
    worst = means.drop(best).idxmin()
    table = seeds.pivot(index="seed", columns="pattern", values="acc")
    paired = (table[best] - table[worst]).dropna()
    marker = {1: "†", 2: "‡"}.get(len(paired), "")
    return Gap(best, worst, float(paired.mean()) if len(paired) else None,
               float(paired.std(ddof=1)) if len(paired) > 1 else None, len(paired), marker)


def model_columns() -> list[str]:
    """The columns of :func:`model_table`, after its ``by`` columns."""
    columns = ["experiments", "valid", "sets"]
    for i, m in enumerate(METRICS.values()):
        columns += [f"acc{m.suffix}", f"acc{m.suffix}_sd", f"delta{m.suffix}", f"delta{m.suffix}_sd", f"delta{m.suffix}_marker"]
        if i == 0:
            columns += ["paired_seeds", "best", "worst"]
    return [*columns, "invalid_rate", "invalid_rate_sd"]


def model_table(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Table 2 / Table 6: per group ``by`` (a model, or a whole slice), each metric's accuracy
    and Δ (π⁺ and π⁻ by the first, valid-only), the invalid rate, and the instance sets behind them."""
    by = list(by)
    # Every number below is a function of the counts per group, seed and pattern: sum once
    # (50,000 records → a few hundred cells), then work on the cells.
    g = frame.groupby([*by, "seed", "pattern"], dropna=False, sort=False)
    cells = pd.DataFrame({"correct": g["correct"].sum(), "valid": g["valid"].sum(), "experiments": g.size()}).reset_index()
    sets = sets_by(frame, by)
    rows = []
    for key, group in cells.groupby(by, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        for i, (name, m) in enumerate(METRICS.items()):
            acc, gap = accuracy(group, by, name).iloc[0], best_worst_gap(group, name)
            if i == 0:
                row.update(experiments=int(acc["experiments"]), valid=int(acc["valid"]),
                           sets=int(sets.get(key if len(by) > 1 else key[0], 0)),
                           paired_seeds=gap.paired_seeds, best=gap.best, worst=gap.worst)
            row.update({f"acc{m.suffix}": acc["acc_mean"], f"acc{m.suffix}_sd": acc["acc_sd"],
                        f"delta{m.suffix}": gap.delta, f"delta{m.suffix}_sd": gap.sd, f"delta{m.suffix}_marker": gap.marker})
        invalid = per_seed(group, by).assign(rate=lambda d: 1 - d["valid"] / d["experiments"])["rate"]
        rows.append({**row, "invalid_rate": invalid.mean(), "invalid_rate_sd": invalid.std(ddof=1)})
    return pd.DataFrame(rows, columns=[*by, *model_columns()])


def sets_by(frame: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """Instance sets with a valid experiment, per group ``by``."""
    keys = list(dict.fromkeys([*by, *INSTANCE_SET]))
    return frame.loc[frame["valid"], keys].drop_duplicates().groupby(list(by), dropna=False).size()


def random_order_sd(frame: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Fig. 3: the random pattern's accuracy per order seed (pooled over selection seeds,
    tasks and labels), mean and sd over order seeds, per group ``by``."""
    rand = frame[frame["pattern"] == "random"]
    g = rand.groupby([*by, "order_seed"], dropna=False)
    per = pd.DataFrame({"acc": _rate(g["correct"].sum(), g["valid"].sum())}).reset_index()
    out = per.groupby(list(by), dropna=False)["acc"].agg(order_mean="mean", order_sd=lambda a: a.std(ddof=1),
                                                          order_seeds="count")
    return out.reset_index()


def pattern_table(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Accuracy per pattern (mean ± sd over seeds) within each group, patterns in paper order."""
    table = accuracy(frame, [*by, "pattern"])
    table["pattern"] = pd.Categorical(table["pattern"], [p for p in PATTERNS if p in set(table["pattern"])]
                                      + sorted(set(table["pattern"]) - set(PATTERNS)))
    return table.sort_values([*by, "pattern"]).reset_index(drop=True)


def variant_deltas(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model and prompt variant: accuracy minus the standard prompt's, mean and sd over seeds."""
    seeds = per_seed(frame, ["model", "prompt_variant"])
    table = seeds.pivot_table(index=["model", "seed"], columns="prompt_variant", values="acc")
    if "standard" not in table.columns:
        return pd.DataFrame(columns=["model", "prompt_variant", "delta_mean", "delta_sd", "seeds"])
    rows = []
    for variant in [c for c in table.columns if c != "standard"]:
        diff = (table[variant] - table["standard"]).dropna()
        for model, d in diff.groupby(level="model"):
            rows.append({"model": model, "prompt_variant": variant, "delta_mean": d.mean(),
                         "delta_sd": d.std(ddof=1), "seeds": len(d)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- beyond the paper


def sets_of(frame: pd.DataFrame) -> int:
    """How many instance sets hold at least one valid experiment."""
    return int(frame[frame["valid"]].groupby(INSTANCE_SET, dropna=False).ngroups) if len(frame) else 0


def _quantiles(samples: np.ndarray, level: float) -> tuple[float, float]:
    samples = samples[np.isfinite(samples)]
    if not len(samples):
        return float("nan"), float("nan")
    alpha = (1 - level) / 2
    return float(np.quantile(samples, alpha)), float(np.quantile(samples, 1 - alpha))


def bootstrap_accuracy(frame: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Cluster-bootstrap interval of pooled valid-only accuracy, resampling instance sets;
    NaN without :data:`MIN_PAIRS` sets holding a valid experiment."""
    sets = frame.groupby(INSTANCE_SET, dropna=False).agg(correct=("correct", "sum"), valid=("valid", "sum"))
    if (sets["valid"] > 0).sum() < MIN_PAIRS:
        return float("nan"), float("nan")
    correct, valid = sets["correct"].to_numpy(float), sets["valid"].to_numpy(float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sets), size=(n_boot, len(sets)))
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = correct[idx].sum(1) / valid[idx].sum(1)
    return _quantiles(samples, level)


def bootstrap_gap(frame: pd.DataFrame, best: str, worst: str, n_boot: int = 2000, seed: int = 0,
                  level: float = 0.95) -> tuple[float, float]:
    """Cluster-bootstrap interval of Acc(best) − Acc(worst), resampling matched instance sets;
    NaN with fewer than :data:`MIN_PAIRS` sets that hold a valid experiment of both."""
    sub = frame[frame["pattern"].isin([best, worst])]
    sets = sub.groupby([*INSTANCE_SET, "pattern"], dropna=False).agg(correct=("correct", "sum"), valid=("valid", "sum"))
    wide = sets.unstack("pattern").fillna(0)
    if best not in wide["valid"] or worst not in wide["valid"] or \
            ((wide[("valid", best)] > 0) & (wide[("valid", worst)] > 0)).sum() < MIN_PAIRS:
        return float("nan"), float("nan")
    cb, vb = wide[("correct", best)].to_numpy(float), wide[("valid", best)].to_numpy(float)
    cw, vw = wide[("correct", worst)].to_numpy(float), wide[("valid", worst)].to_numpy(float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(wide), size=(n_boot, len(wide)))
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = cb[idx].sum(1) / vb[idx].sum(1) - cw[idx].sum(1) / vw[idx].sum(1)
    return _quantiles(samples, level)


@dataclass
class PairedTest:
    test: str
    pairs: int
    statistic: float
    p_value: float


def paired_test(frame: pd.DataFrame, a: str, b: str, n_perm: int = 10000, seed: int = 0) -> PairedTest:
    """Do patterns ``a`` and ``b`` differ on the same instance sets?

    Pairs are instance sets with a valid experiment under both patterns. With one
    experiment per set and pattern: exact McNemar (two-sided binomial test on the
    discordant pairs). With several (random over order seeds): a sign-flip permutation
    test on the per-set differences of mean correctness. With fewer than
    :data:`MIN_PAIRS` pairs the test is ``"not testable"`` (p = NaN): no outcome of so few
    pairs could be significant, so none is reported.
    """
    valid = frame[frame["valid"] & frame["pattern"].isin([a, b])]
    per_set = valid.groupby([*INSTANCE_SET, "pattern"], dropna=False)["correct"].agg(["mean", "size"]).unstack("pattern")
    per_set = per_set.dropna()
    if per_set.empty or a not in per_set["mean"].columns or b not in per_set["mean"].columns:
        return PairedTest("none", 0, float("nan"), float("nan"))
    xa, xb = per_set[("mean", a)].to_numpy(), per_set[("mean", b)].to_numpy()
    if len(xa) < MIN_PAIRS:
        return PairedTest("not testable", len(xa), float((xa - xb).mean()), float("nan"))
    if (per_set["size"] == 1).all().all():
        only_a = int(((xa == 1) & (xb == 0)).sum())
        only_b = int(((xa == 0) & (xb == 1)).sum())
        return PairedTest("exact McNemar", len(xa), float(only_a - only_b), mcnemar_exact(only_a, only_b))
    diff = xa - xb
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(n_perm, len(diff)))
    extreme = (np.abs((signs * diff).mean(1)) >= observed - 1e-12).sum()
    return PairedTest("sign-flip permutation", len(diff), float(diff.mean()), float((extreme + 1) / (n_perm + 1)))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts ``b`` and ``c``."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def reference_calculation(n: int = 2000, p: float = 0.55, q: float = 0.9) -> dict[str, float]:
    """App. C.4: Z = Z_maj + Z_min with Z_maj ~ Bin(n_maj, q), Z_min ~ Bin(n_min, 1 − q).

    Returns E[Z], SD(Z), how many SDs the tie boundary n/2 lies below E[Z], and the exact
    probability of a reversed or tied majority, P(Z ≤ n/2), from the convolution of the
    two binomial distributions (computed in log space).
    """
    n_maj = round(p * n)
    n_min = n - n_maj
    expected = n_maj * q + n_min * (1 - q)
    sd = math.sqrt(n_maj * q * (1 - q) + n_min * (1 - q) * q)
    pmf_maj = _binomial_pmf(n_maj, q)
    pmf_min = _binomial_pmf(n_min, 1 - q)
    pmf = np.convolve(pmf_maj, pmf_min)
    boundary = n / 2
    return {
        "n_maj": n_maj, "n_min": n_min, "expected": expected, "sd": sd, "z_of_tie": (expected - boundary) / sd,
        "p_reversed": float(pmf[: math.ceil(boundary)].sum()),
        "p_reversed_or_tied": float(pmf[: math.floor(boundary) + 1].sum()),
    }


def _binomial_pmf(n: int, q: float) -> np.ndarray:
    k = np.arange(n + 1)
    log_comb = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k])
    with np.errstate(divide="ignore"):
        log_pmf = log_comb + k * math.log(q) + (n - k) * math.log1p(-q)
    return np.exp(log_pmf)
