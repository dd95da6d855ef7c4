"""What a planted model must score, written from the paper's pattern definitions (App. C.3)
and nothing of mip: no import of mip.experiment.instances, mip.models or any other mip module.

A planted model reads the first k (or the last k, or all) of the n presented instances,
gets each one's label right and answers the majority of what it read (a tie is wrong, §3.4
footnote 4). Only where the majority-label instances stand matters, so under each
structured pattern the answer follows from the pattern's block layout alone:

- majority_first  X_maj ⊕ X_min;   majority_last  X_min ⊕ X_maj
- majority_edges  X_maj^L ⊕ X_min ⊕ X_maj^R, |X_maj^L| = ⌈n_maj/2⌉
- majority_middle X_min^L ⊕ X_maj ⊕ X_min^R, |X_min^L| = ⌈n_min/2⌉
- soft_majority_edges  S^L ⊕ A ⊕ S^R, A alternating (maj, min) pairs, |S| = n_maj − n_min, |S^L| = ⌈|S|/2⌉
- soft_majority_middle A^L ⊕ S ⊕ A^R, |A^L| = 2·⌈n_min/2⌉

The number of majority-label instances among the first j of a block is j for a majority
block, 0 for a minority block and ⌈j/2⌉ for an alternating block (it starts with x^maj_1);
among its last j it is j, 0 and ⌊j/2⌋. The random pattern shuffles X_maj ⊕ X_min by the
order seed: its count among the k read is hypergeometric (:func:`p_random_correct`), and
for one seed it is the seeded draw (:func:`random_order`, numpy's ``default_rng(seed)
.permutation`` — the generator mip's records name — written here again).

>>> majority_read("majority_middle", 20, 0.6, first=9)   # 4 minority, then 5 of 12 majority
5
>>> majority_read("majority_first", 20, 0.6, last=9)     # the last 9: 1 majority, 8 minority
1
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

PATTERNS = ("random", "majority_first", "majority_last", "majority_edges", "majority_middle",
            "soft_majority_edges", "soft_majority_middle")
STRUCTURED = PATTERNS[1:]
BINS = ("<25%", "<75%", "<100%", "=100%")


def counts(n: int, p: float) -> tuple[int, int]:
    n_maj = round(n * p)
    return n_maj, n - n_maj


def blocks(pattern: str, n_maj: int, n_min: int) -> list[tuple[str, int]]:
    """The pattern's blocks in prompt order, as (majority | minority | alternating, length)."""
    s = n_maj - n_min
    half_a = 2 * math.ceil(n_min / 2)
    return {
        "majority_first": [("majority", n_maj), ("minority", n_min)],
        "majority_last": [("minority", n_min), ("majority", n_maj)],
        "majority_edges": [("majority", math.ceil(n_maj / 2)), ("minority", n_min), ("majority", n_maj // 2)],
        "majority_middle": [("minority", math.ceil(n_min / 2)), ("majority", n_maj), ("minority", n_min // 2)],
        "soft_majority_edges": [("majority", math.ceil(s / 2)), ("alternating", 2 * n_min), ("majority", s // 2)],
        "soft_majority_middle": [("alternating", half_a), ("majority", s), ("alternating", 2 * n_min - half_a)],
    }[pattern]


def _in_block(kind: str, j: int, from_end: bool) -> int:
    """Majority-label instances among the first (or last) j of one block."""
    if kind == "alternating":  # (maj, min) pairs: a maj leads, a min closes
        return j // 2 if from_end else math.ceil(j / 2)
    return j if kind == "majority" else 0


def majority_read(pattern: str, n: int, p: float, first: Optional[int] = None, last: Optional[int] = None) -> int:
    """Majority-label instances among the first ``first`` (or last ``last``, or all) under a structured pattern."""
    n_maj, n_min = counts(n, p)
    layout = blocks(pattern, n_maj, n_min)
    if last is not None:
        layout, left = layout[::-1], min(last, n)
    else:
        left = n if first is None else min(first, n)
    out = 0
    for kind, length in layout:
        take = min(length, left)
        # an alternating block read from its end: its last j hold ⌊j/2⌋ majority instances
        out += _in_block(kind, take, from_end=last is not None)
        left -= take
    return out


def read_count(n: int, first: Optional[int], last: Optional[int]) -> int:
    return min(first or last or n, n)


def correct(majority: int, read: int) -> float:
    return float(majority > read - majority)


def random_order(n_maj: int, n_min: int, order_seed: int) -> np.ndarray:
    """Whether each presented instance is a majority one, for the random pattern at ``order_seed``."""
    return np.random.default_rng(order_seed).permutation(n_maj + n_min) < n_maj


def p_random_correct(n: int, p: float, read: int) -> float:
    """P(the k read hold a strict majority of majority-label instances) under a uniform
    shuffle: the hypergeometric tail, P(X > k/2), X ~ Hypergeometric(n, n_maj, k)."""
    n_maj, n_min = counts(n, p)
    return sum(math.comb(n_maj, x) * math.comb(n_min, read - x) for x in range(read // 2 + 1, read + 1)) \
        / math.comb(n, read)


def pattern_accuracy(pattern: str, n: int, p: float, first: Optional[int], last: Optional[int],
                     order_seeds=(0, 1, 2)) -> float:
    """Accuracy of the planted model under ``pattern``; for random, the mean over the order seeds."""
    k = read_count(n, first, last)
    if pattern in STRUCTURED:
        return correct(majority_read(pattern, n, p, first, last), k)
    n_maj, n_min = counts(n, p)
    hits = []
    for seed in order_seeds:
        is_maj = random_order(n_maj, n_min, seed)
        seen = is_maj[:k] if last is None else is_maj[n - k:]
        hits.append(correct(int(seen.sum()), k))
    return float(np.mean(hits))


def expected(n: int, p: float, first: Optional[int] = None, last: Optional[int] = None, order_seeds=(0, 1, 2)) -> dict:
    """Everything the report must say of the planted model: accuracy per pattern and pooled
    (random counts once per order seed, §3.5), Δ with the sets of patterns π⁺ and π⁻ may
    name (ties), coverage, its Table 3 bin and the per-ID mention rates (IDs 1..n)."""
    per = {x: pattern_accuracy(x, n, p, first, last, order_seeds) for x in PATTERNS}
    weight = {x: len(order_seeds) if x == "random" else 1 for x in PATTERNS}
    k = read_count(n, first, last)
    read = range(k) if last is None else range(n - k, n)
    share = k / n
    rates = np.zeros(n)
    rates[list(read)] = 1.0
    return {
        "patterns": per,
        "acc": sum(per[x] * weight[x] for x in PATTERNS) / sum(weight.values()),
        "delta": max(per.values()) - min(per.values()),
        "best": {x for x in PATTERNS if per[x] == max(per.values())},
        "worst": {x for x in PATTERNS if per[x] == min(per.values())},
        "coverage": share,
        "bin": BINS[0] if share < 0.25 else BINS[1] if share < 0.75 else BINS[2] if share < 1 else BINS[3],
        "mention_rate": rates.tolist(),
    }
