"""Instance sets and the seven order patterns (paper §3.3, App. C.3).

Everything here is a pure function of its arguments; randomness enters only through
the seeds ``s`` (selection) and ``s_order`` (the random pattern).

>>> from mip.experiment.instances import arrange
>>> arrange(["A1", "A2", "A3"], ["B1", "B2"], "majority_middle")
['B1', 'A1', 'A2', 'A3', 'B2']

Exercised by ``pytest tests/test_instances.py``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")

Layout = Callable[[int, int], list[tuple[str, int]]]


@dataclass(frozen=True)
class Pattern:
    """An order pattern (App. C.3), defined once by its block layout: for ``n_maj`` majority
    and ``n_min`` minority instances, the blocks in prompt order as ``(kind, length)`` with
    kind majority, minority or alternating (x^maj_i, x^min_i pairs). The layout drives
    :func:`arrange`, the attribution regions and the figures' shading alike (:func:`regions`).
    ``layout`` is None for random, a shuffle by the order seed."""

    name: str
    layout: Layout | None
    counterpart: str | None = None
    """The pattern with the blocks the other way round (App. C.3), for the paired gaps."""


def _soft_edges(a: int, b: int) -> list[tuple[str, int]]:
    k = math.ceil((a - b) / 2)  # the surplus majority, split around the alternation
    return [("majority", k), ("alternating", 2 * b), ("majority", a - b - k)]


def _soft_middle(a: int, b: int) -> list[tuple[str, int]]:
    k = 2 * math.ceil(b / 2)  # the alternation, split around the surplus majority
    return [("alternating", k), ("majority", a - b), ("alternating", 2 * b - k)]


#: The registry of order patterns, in the order the paper lists them. A new pattern is one
#: entry here, a one-line ``conf/pattern/<name>.yaml`` and a test.
REGISTRY: dict[str, Pattern] = {p.name: p for p in (
    Pattern("random", None),
    Pattern("majority_first", lambda a, b: [("majority", a), ("minority", b)], "majority_last"),
    Pattern("majority_last", lambda a, b: [("minority", b), ("majority", a)], "majority_first"),
    Pattern("majority_edges", lambda a, b: [("majority", math.ceil(a / 2)), ("minority", b),
                                            ("majority", a - math.ceil(a / 2))], "majority_middle"),
    Pattern("majority_middle", lambda a, b: [("minority", math.ceil(b / 2)), ("majority", a),
                                             ("minority", b - math.ceil(b / 2))], "majority_edges"),
    Pattern("soft_majority_edges", _soft_edges, "soft_majority_middle"),
    Pattern("soft_majority_middle", _soft_middle, "soft_majority_edges"),
)}

#: Stable registry names of the patterns, in the order the paper lists them.
PATTERNS: tuple[str, ...] = tuple(REGISTRY)

#: The counterpart pairs of App. C.3.
COUNTERPARTS: tuple[tuple[str, str], ...] = tuple(
    (p.name, p.counterpart) for p in REGISTRY.values()
    if p.counterpart and PATTERNS.index(p.name) < PATTERNS.index(p.counterpart))


def pattern_of(name: str) -> Pattern:
    if name not in REGISTRY:
        raise ValueError(f"Unknown pattern {name!r}; choose one of {', '.join(PATTERNS)}.")
    return REGISTRY[name]


def structured(name: str) -> bool:
    """Whether ``name`` is a registered pattern with a block layout; random (a shuffle by the
    order seed, run under every order seed) and names that are no pattern are not.

    >>> structured("majority_first"), structured("random"), structured("structured patterns pooled")
    (True, False, False)
    """
    return name in REGISTRY and REGISTRY[name].layout is not None


def split_counts(n: int, p: float) -> tuple[int, int]:
    """Return ``(n_maj, n_min)`` with ``n_maj = p·n`` (§3.3).

    ``p`` must lie strictly between 0.5 and 1 and ``p·n`` must be a whole number.
    """
    if n < 2:
        raise ValueError(f"n must be at least 2, got n={n}.")
    if not 0.5 < p < 1:
        raise ValueError(
            f"p must lie strictly between 0.5 and 1 (a majority and at least one minority instance), got p={p}."
        )
    n_maj = p * n
    if abs(n_maj - round(n_maj)) > 1e-6:
        raise ValueError(
            f"n·p must be a whole number of majority instances, got n={n}, p={p} (n·p={n_maj:g}). "
            "Choose n and p such that n·p is an integer."
        )
    n_maj = int(round(n_maj))
    return n_maj, n - n_maj


def select(
    majority_pool: Sequence[T],
    minority_pool: Sequence[T],
    n: int,
    p: float,
    seed: int,
) -> tuple[list[T], list[T]]:
    """Draw the instance set of App. C.3: shuffle each label's pool with ``seed`` and
    take the first ``n_maj`` majority and ``n_min`` minority instances.

    The pools must be given in a canonical order (the pool's stored order), so that
    the same seed always selects the same instances.
    """
    n_maj, n_min = split_counts(n, p)
    for name, pool, need in (("majority", majority_pool, n_maj), ("minority", minority_pool, n_min)):
        if need > len(pool):
            raise ValueError(
                f"The {name} label needs {need} instances (n={n}, p={p}) but the pool holds only {len(pool)}. "
                "Lower n, or build a larger pool."
            )
    return _shuffled(majority_pool, seed, n_maj), _shuffled(minority_pool, seed, n_min)


def _shuffled(items: Sequence[T] | np.ndarray, seed: int | list[int], take: int | None = None) -> list[T] | np.ndarray:
    """``items`` shuffled by ``seed``; with ``take``, only the first ``take`` of that shuffle.
    An array comes back as an array (indexed at once, no Python list in between)."""
    order = np.arange(len(items))
    # default_rng(seed) exactly, without its error-state wrapper (a third of the draw's cost);
    # Generator.shuffle is Generator.permutation(n) without its checks
    np.random.Generator(np.random.PCG64(seed)).shuffle(order)
    order = order[:take]
    if isinstance(items, np.ndarray):
        return items[order]
    return picked(items, order.tolist())


def picked(items: Sequence[T], positions: Sequence[int]) -> list[T]:
    """``[items[i] for i in positions]`` in one C loop rather than a Python one."""
    if len(positions) < 2:  # itemgetter of one index returns the item itself
        return [items[i] for i in positions]
    return list(operator.itemgetter(*positions)(items))


def arrange(
    majority: Sequence[T],
    minority: Sequence[T],
    pattern: str,
    order_seed: int | None = None,
) -> list[T]:
    """Arrange an instance set under one of the seven order patterns (App. C.3).

    ``majority`` and ``minority`` are the selected lists in selection order
    (X_maj, X_min). ``order_seed`` (s_order) is required for ``random`` and refused
    for every other pattern. ``⊕`` below is list concatenation.

    - random: shuffle of X_maj ⊕ X_min by s_order
    - majority_first: X_maj ⊕ X_min;  majority_last: X_min ⊕ X_maj
    - majority_edges: X_maj^L ⊕ X_min ⊕ X_maj^R, |X_maj^L| = ⌈n_maj/2⌉
    - majority_middle: X_min^L ⊕ X_maj ⊕ X_min^R, |X_min^L| = ⌈n_min/2⌉
    - soft_majority_edges: S^L ⊕ A ⊕ S^R, with A = (x^maj_1, x^min_1, …, x^maj_{n_min}, x^min_{n_min}),
      S = the surplus majority (x^maj_{n_min+1}, …), |S^L| = ⌈|S|/2⌉
    - soft_majority_middle: A^L ⊕ S ⊕ A^R, |A^L| = 2·⌈n_min/2⌉

    >>> arrange([1, 2, 3, 4], [5, 6], "soft_majority_middle")
    [1, 5, 3, 4, 2, 6]
    """
    maj, mino = list(majority), list(minority)
    layout = pattern_of(pattern).layout
    if layout is None:
        if order_seed is None:
            raise ValueError("The random pattern needs an order seed (s_order).")
        return _shuffled(maj + mino, order_seed)
    if order_seed is not None:
        raise ValueError(f"Pattern {pattern!r} is deterministic; it takes no order seed.")
    if len(maj) < len(mino):
        raise ValueError(f"The majority list ({len(maj)}) must not be shorter than the minority list ({len(mino)}).")
    blocks = layout(len(maj), len(mino))
    # Alternating blocks pair x^maj_i with x^min_i from the start of each list; majority blocks
    # then take the surplus (x^maj_{n_min+1}, …), or X_maj from its start when nothing alternates.
    pairs = [x for pair in zip(maj, mino) for x in pair]
    taken = {"majority": len(mino) if any(kind == "alternating" for kind, _ in blocks) else 0, "minority": 0,
             "alternating": 0}
    source = {"majority": maj, "minority": mino, "alternating": pairs}
    out: list[T] = []
    for kind, length in blocks:
        out += source[kind][taken[kind]:taken[kind] + length]
        taken[kind] += length
    return out


def arrangement(n_maj: int, n_min: int, pattern: str, order_seed: int | None = None) -> np.ndarray:
    """:func:`arrange` as positions into X_maj ⊕ X_min, for lists of these lengths:
    ``arrange(maj, mino, …)[k] == (maj + mino)[arrangement(len(maj), len(mino), …)[k]]``.
    The random pattern is one permutation here, without a Python list in between.

    >>> arrangement(4, 2, "majority_middle").tolist()
    [4, 0, 1, 2, 3, 5]
    """
    if pattern_of(pattern).layout is None and order_seed is not None:
        return _shuffled(np.arange(n_maj + n_min), order_seed)  # the very draw arrange() makes
    return np.asarray(arrange(range(n_maj), range(n_maj, n_maj + n_min), pattern, order_seed), dtype=np.intp)


def order_seeds_for(pattern: str, order_seeds: Sequence[int]) -> list[int | None]:
    """The order seeds a pattern runs under: all of them for random (no block layout), none otherwise."""
    return list(order_seeds) if pattern_of(pattern).layout is None else [None]


def shuffle_within_labels(majority: Sequence[T], minority: Sequence[T],
                          shuffle_seed: int) -> tuple[Sequence[T], Sequence[T]]:
    """Expanded orderings (§5.2.1): each label's selected list shuffled on its own."""
    return _shuffled(majority, [shuffle_seed, 0]), _shuffled(minority, [shuffle_seed, 1])


def regions(pattern: str, n_maj: int, n_min: int) -> list[tuple[int, int, str]]:
    """The label regions of a pattern as ``(start, end, kind)`` over positions 0..n-1 (end
    exclusive); kind is majority, minority, alternating, or mixed for random. The same
    block layout :func:`arrange` follows."""
    layout = pattern_of(pattern).layout
    if layout is None:
        return [(0, n_maj + n_min, "mixed")]
    out, start = [], 0
    for kind, length in layout(n_maj, n_min):
        if length:
            out.append((start, start + length, kind))
        start += length
    return out
