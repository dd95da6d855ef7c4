"""Beyond the paper: how far the paper's numbers can be trusted (pure, seeded).

- cluster-bootstrap intervals of accuracy and of Δ over instance sets;
- a paired test between two patterns on matched experiments (exact McNemar, or a
  sign-flip permutation test where the random pattern has several order seeds), paired by the
  one rule of :func:`mip.analysis.pairs.patterns`;
- the App. C.4 reference calculation, exact.

>>> reference_calculation(2000, 0.55, 0.9)["expected"]
1080.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mip.analysis import pairs
from mip.analysis.stats import set_columns

#: mip's own tests and intervals (beyond the paper) need this many paired instance sets:
#: with fewer, a two-sided exact test (McNemar, sign flips) cannot reach p < 0.05 even when
#: every pair agrees (its smallest p is 2 / 2^pairs = 0.0625 at 5 pairs).
MIN_PAIRS = 6



def sets_of(frame: pd.DataFrame) -> int:
    """How many instance sets hold at least one valid experiment."""
    return int(frame[frame["valid"]].groupby(set_columns(frame), dropna=False).ngroups) if len(frame) else 0


def _quantiles(samples: np.ndarray, level: float) -> tuple[float, float]:
    samples = samples[np.isfinite(samples)]
    if not len(samples):
        return float("nan"), float("nan")
    alpha = (1 - level) / 2
    return float(np.quantile(samples, alpha)), float(np.quantile(samples, 1 - alpha))


def bootstrap_accuracy(frame: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float]:
    """Cluster-bootstrap interval of pooled valid-only accuracy, resampling instance sets;
    NaN without :data:`MIN_PAIRS` sets holding a valid experiment."""
    sets = frame.groupby(set_columns(frame), dropna=False).agg(correct=("correct", "sum"), valid=("valid", "sum"))
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
    sub, key = _matched(frame, best, worst)
    sets = sub.groupby([*key, "pattern"], dropna=False).agg(correct=("correct", "sum"), valid=("valid", "sum"))
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


def _matched(frame: pd.DataFrame, a: str, b: str) -> tuple[pd.DataFrame, list[str]]:
    """The experiments of patterns ``a`` and ``b`` that both hold (:func:`mip.analysis.pairs.patterns`),
    and the identity columns that pair them."""
    both = pairs.two_patterns(frame, a, b)
    return both.frame, both.key


@dataclass
class PairedTest:
    test: str
    pairs: int
    statistic: float
    p_value: float


def paired_test(frame: pd.DataFrame, a: str, b: str, n_perm: int = 10000, seed: int = 0) -> PairedTest:
    """Do patterns ``a`` and ``b`` differ on the same instance sets?

    Pairs are matched experiments (:func:`mip.analysis.pairs.patterns`: the same in every
    identity field but the pattern) with a valid answer under both. With one experiment per
    pair and pattern: exact McNemar (two-sided binomial test on the
    discordant pairs). With several (random over order seeds): a sign-flip permutation
    test on the per-set differences of mean correctness. With fewer than
    :data:`MIN_PAIRS` pairs the test is ``"not testable"`` (p = NaN): no outcome of so few
    pairs could be significant, so none is reported.
    """
    valid = pairs.valid_pairs(frame, a, b)  # the one pairing rule, also report.html's list behind the test
    per_set = valid.groupby([*pairs.pair_key(valid), "pattern"], dropna=False)["correct"].agg(["mean", "size"])
    per_set = per_set.unstack("pattern").dropna()
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
