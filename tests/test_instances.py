"""Selection and the seven order patterns (App. C.3)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numpy as np

from mip.experiment.instances import COUNTERPARTS, PATTERNS, arrange, arrangement, select, shuffle_within_labels, split_counts

# The 20-instance toy of App. C.3 / Fig. 8 with p = 0.6: 12 majority (A), 8 minority (B).
MAJ = [f"A{i}" for i in range(1, 13)]
MIN = [f"B{i}" for i in range(1, 9)]

TOY = {
    "majority_first": MAJ + MIN,
    "majority_last": MIN + MAJ,
    # ⌈12/2⌉ = 6 majority on the left
    "majority_edges": MAJ[:6] + MIN + MAJ[6:],
    # ⌈8/2⌉ = 4 minority on the left
    "majority_middle": MIN[:4] + MAJ + MIN[4:],
    # A = A1 B1 … A8 B8, surplus S = A9..A12, ⌈4/2⌉ = 2 on the left
    "soft_majority_edges": ["A9", "A10", "A1", "B1", "A2", "B2", "A3", "B3", "A4", "B4",
                            "A5", "B5", "A6", "B6", "A7", "B7", "A8", "B8", "A11", "A12"],
    # A^L = first 2·⌈8/2⌉ = 8 alternating items
    "soft_majority_middle": ["A1", "B1", "A2", "B2", "A3", "B3", "A4", "B4",
                             "A9", "A10", "A11", "A12",
                             "A5", "B5", "A6", "B6", "A7", "B7", "A8", "B8"],
}


@pytest.mark.parametrize("pattern", sorted(TOY))
def test_toy_example_of_app_c3(pattern):
    assert arrange(MAJ, MIN, pattern) == TOY[pattern]


def test_toy_random_is_a_seeded_shuffle():
    a = arrange(MAJ, MIN, "random", order_seed=0)
    assert sorted(a) == sorted(MAJ + MIN) and a != MAJ + MIN
    assert a == arrange(MAJ, MIN, "random", order_seed=0)
    assert a != arrange(MAJ, MIN, "random", order_seed=1)


def test_all_seven_patterns_are_named():
    assert set(PATTERNS) == set(TOY) | {"random"}
    assert {p for pair in COUNTERPARTS for p in pair} == set(TOY)


def _blocks(seq):
    """Run-length encoding of labels: [('A', 6), ('B', 8), ...]."""
    out = []
    for x in seq:
        label = x[0]
        if out and out[-1][0] == label:
            out[-1][1] += 1
        else:
            out.append([label, 1])
    return [tuple(b) for b in out]


sizes = st.integers(min_value=1, max_value=60).flatmap(
    lambda n_min: st.tuples(st.integers(min_value=n_min + 1, max_value=n_min + 80), st.just(n_min))
)


@settings(max_examples=200, deadline=None)
@given(sizes, st.sampled_from(PATTERNS), st.integers(0, 10_000))
def test_every_pattern_is_a_permutation_with_the_papers_blocks(counts, pattern, order_seed):
    n_maj, n_min = counts
    maj = [f"A{i}" for i in range(n_maj)]
    mino = [f"B{i}" for i in range(n_min)]
    out = arrange(maj, mino, pattern, order_seed if pattern == "random" else None)
    assert sorted(out) == sorted(maj + mino)
    assert len(out) == len(set(out))
    s = n_maj - n_min
    blocks = _blocks(out)
    if pattern == "majority_first":
        assert blocks == [("A", n_maj), ("B", n_min)] and out == maj + mino
    elif pattern == "majority_last":
        assert blocks == [("B", n_min), ("A", n_maj)]
    elif pattern == "majority_edges":
        assert blocks == [("A", math.ceil(n_maj / 2)), ("B", n_min), ("A", n_maj // 2)][: 3 if n_maj > 1 else 2]
    elif pattern == "majority_middle":
        expected = [("B", math.ceil(n_min / 2)), ("A", n_maj), ("B", n_min // 2)]
        assert blocks == [b for b in expected if b[1]]
    elif pattern in ("soft_majority_edges", "soft_majority_middle"):
        # Within each label, selection order is kept.
        assert [x for x in out if x[0] == "B"] == mino
        surplus = set(maj[n_min:])
        if pattern == "soft_majority_edges":
            left = math.ceil(s / 2)
            assert set(out[:left]) | set(out[len(out) - (s - left):]) == surplus
            core = out[left: len(out) - (s - left)]
        else:
            k = 2 * math.ceil(n_min / 2)
            assert set(out[k:k + s]) == surplus
            core = out[:k] + out[k + s:]
        # The non-surplus part alternates A, B, A, B, … starting with x^maj_1.
        assert core == [x for pair in zip(maj, mino) for x in pair]


@settings(max_examples=200, deadline=None)
@given(sizes, st.sampled_from(PATTERNS), st.integers(0, 10_000), st.integers(0, 100))
def test_arrangement_indexes_what_arrange_returns(counts, pattern, order_seed, shuffle_seed):
    """The job arranges pool positions with numpy arrays; it must present what arrange() and
    shuffle_within_labels() give for lists, or prompts (and their hashes) would change."""
    n_maj, n_min = counts
    seed = order_seed if pattern == "random" else None
    maj, mino = [f"A{i}" for i in range(n_maj)], [f"B{i}" for i in range(n_min)]
    assert [(maj + mino)[i] for i in arrangement(n_maj, n_min, pattern, seed)] == arrange(maj, mino, pattern, seed)
    as_lists = shuffle_within_labels(maj, mino, shuffle_seed)
    as_arrays = shuffle_within_labels(np.array(maj), np.array(mino), shuffle_seed)
    assert [list(x) for x in as_lists] == [x.tolist() for x in as_arrays]


def test_selection_is_seeded_per_label_and_prefix_stable():
    pool_a = [f"a{i}" for i in range(100)]
    pool_b = [f"b{i}" for i in range(100)]
    maj, mino = select(pool_a, pool_b, n=20, p=0.55, seed=3)
    assert (len(maj), len(mino)) == (11, 9)
    assert (maj, mino) == select(pool_a, pool_b, n=20, p=0.55, seed=3)
    assert maj != select(pool_a, pool_b, n=20, p=0.55, seed=4)[0]
    # First n_maj of the same shuffle: a bigger set extends the smaller one.
    bigger, _ = select(pool_a, pool_b, n=40, p=0.55, seed=3)
    assert bigger[:11] == maj


def test_core_setting_counts():
    assert split_counts(2000, 0.55) == (1100, 900)


@pytest.mark.parametrize(
    "n,p,message",
    [(2000, 0.5, "strictly between 0.5 and 1"), (100, 1.0, "strictly between"), (10, 0.55, "whole number"),
     (1, 0.9, "at least 2")],
)
def test_bad_settings_are_refused_clearly(n, p, message):
    with pytest.raises(ValueError, match=message):
        split_counts(n, p)


def test_too_few_instances_names_the_numbers():
    with pytest.raises(ValueError, match="needs 11 instances .* holds only 5"):
        select(list(range(5)), list(range(50)), n=20, p=0.55, seed=0)


def test_order_seed_rules():
    with pytest.raises(ValueError, match="needs an order seed"):
        arrange(MAJ, MIN, "random")
    with pytest.raises(ValueError, match="takes no order seed"):
        arrange(MAJ, MIN, "majority_first", order_seed=1)
    with pytest.raises(ValueError, match="Unknown pattern"):
        arrange(MAJ, MIN, "majority_sideways")


@settings(max_examples=200, deadline=None)
@given(sizes, st.sampled_from(PATTERNS[1:]))
def test_regions_match_the_arrangement(counts, pattern):
    from mip.experiment.instances import regions

    n_maj, n_min = counts
    out = arrange([f"A{i}" for i in range(n_maj)], [f"B{i}" for i in range(n_min)], pattern)
    spans = regions(pattern, n_maj, n_min)
    assert spans[0][0] == 0 and spans[-1][1] == n_maj + n_min
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    for start, end, kind in spans:
        labels = {x[0] for x in out[start:end]}
        assert labels == {"majority": {"A"}, "minority": {"B"}, "alternating": {"A", "B"}}[kind] or (end - start == 1)


def test_the_shuffle_draws_what_generator_permutation_draws():
    """Stored records hold the instances a seed drew: the shuffle must draw exactly what
    ``default_rng(seed).permutation`` drew when they were written (the faster shuffle included)."""
    import numpy as np

    from mip.experiment.instances import _shuffled

    for seed in (0, 1, 7, 12345, [3, 0], [3, 1]):
        for n, take in ((1, None), (2, None), (5, 3), (2000, None), (3000, 1100)):
            expected = np.random.default_rng(seed).permutation(n)[:take]
            assert _shuffled(np.arange(n) * 10, seed, take).tolist() == (expected * 10).tolist()
            assert _shuffled(list(range(n)), seed, take) == expected.tolist()
