"""The paper's metrics and the statistics beyond it, against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mip.analysis import inference, stats
from mip.analysis.report import metric_tables as tables
from mip.analysis.results import COLUMNS


def frame(rows: list[dict]) -> pd.DataFrame:
    """An analysis table from short rows: defaults for every column not given."""
    full = []
    for i, r in enumerate(rows):
        row = {"key": f"k{i}", "model": "M", "task": "ner", "n": 20, "p": 0.6, "majority_label": "PER", "seed": 0,
               "pattern": "majority_first", "order_seed": None, "shuffle_seed": None, "prompt_variant": "standard", "budget": "20k",
               "verdict": "correct", "invalid_kind": None, "answer": None, "reasoning": None, "output": None,
               "prompt_tokens": 100, "completion_tokens": 10, "reasoning_tokens": None, "cost": None, "attempts": 1, **r}
        row["valid"] = row["verdict"] != "invalid"
        row["correct"] = row["verdict"] == "correct"
        row.setdefault("strategy", "single_call")
        row.setdefault("base_model", row["model"])
        full.append(row)
    return pd.DataFrame(full).reindex(columns=COLUMNS)


def cell(seed, pattern, verdicts, **kw):
    return [{"seed": seed, "pattern": pattern, "verdict": v, "task": f"t{i}", **kw} for i, v in enumerate(verdicts)]


C, I, X = "correct", "incorrect", "invalid"


def test_valid_only_accuracy_mean_and_sd_over_seeds():
    rows = cell(0, "majority_first", [C, C, C, I, X]) + cell(1, "majority_first", [C, I, C, I]) + cell(2, "majority_first", [C] * 4)
    acc = stats.accuracy(frame(rows)).iloc[0]
    assert acc["acc_mean"] == pytest.approx(0.75)  # (3/4 + 2/4 + 4/4) / 3
    assert acc["acc_sd"] == pytest.approx(0.25)
    assert (acc["valid"], acc["experiments"]) == (12, 13)
    all_acc = stats.accuracy(frame(rows), metric="all").iloc[0]
    assert all_acc["acc_mean"] == pytest.approx((3 / 5 + 2 / 4 + 1) / 3)


def test_best_worst_gap_pairs_seeds():
    rows = []
    for seed, (first, middle) in enumerate([(4, 1), (3, 1), (4, 2)]):
        rows += cell(seed, "majority_first", [C] * first + [I] * (4 - first))
        rows += cell(seed, "majority_middle", [C] * middle + [I] * (4 - middle))
    gap = stats.best_worst_gap(frame(rows))
    assert (gap.best, gap.worst, gap.paired_seeds, gap.marker) == ("majority_first", "majority_middle", 3, "")
    diffs = [3 / 4, 2 / 4, 2 / 4]
    assert gap.delta == pytest.approx(sum(diffs) / 3)
    assert gap.sd == pytest.approx(pd.Series(diffs).std())


@pytest.mark.parametrize("missing,marker", [([2], "‡"), ([1, 2], "†")])
def test_seeds_without_a_valid_experiment_drop_out_and_are_marked(missing, marker):
    rows = []
    for seed in range(3):
        rows += cell(seed, "majority_first", [C, C])
        rows += cell(seed, "majority_middle", [X, X] if seed in missing else [I, C])
    gap = stats.best_worst_gap(frame(rows))
    assert gap.paired_seeds == 3 - len(missing) and gap.marker == marker
    assert gap.delta == pytest.approx(0.5)
    assert (gap.sd is None) == (marker == "†")


def test_an_all_invalid_pattern_is_never_the_worst():
    rows = cell(0, "majority_first", [C, C]) + cell(0, "majority_last", [C, I]) + cell(0, "majority_middle", [X, X])
    gap = stats.best_worst_gap(frame(rows))
    assert gap.worst == "majority_last"
    all_gap = stats.best_worst_gap(frame(rows), "all")
    assert all_gap.worst == "majority_middle"  # counted as wrong in the all-experiment view


def test_a_single_pattern_has_no_gap():
    assert stats.best_worst_gap(frame(cell(0, "random", [C, I]))).delta is None


def test_invalid_rates_by_kind():
    rows = [{"verdict": X, "invalid_kind": "parse"}, {"verdict": X, "invalid_kind": "truncated"}, {"verdict": C}, {"verdict": I}]
    rates = stats.invalid_rates(frame(rows)).iloc[0]
    assert (rates["invalid_rate"], rates["parse_rate"], rates["truncated_rate"], rates["input_overflow_rate"]) == (0.5, 0.25, 0.25, 0)


def test_model_table_has_both_views():
    rows = cell(0, "majority_first", [C, C, X]) + cell(0, "majority_middle", [I, C, C])
    table = stats.model_table(frame(rows)).iloc[0]
    assert table["acc"] == pytest.approx(4 / 5) and table["acc_all"] == pytest.approx(4 / 6)
    assert table["invalid_rate"] == pytest.approx(1 / 6)
    assert table["delta"] == pytest.approx(1 - 2 / 3) and table["delta_marker"] == "†"


def test_variant_deltas():
    rows = []
    for seed, (std, hint) in enumerate([(0.5, 1.0), (0.5, 0.5)]):
        rows += cell(seed, "random", [C] * int(4 * std) + [I] * (4 - int(4 * std)), prompt_variant="standard")
        rows += cell(seed, "random", [C] * int(4 * hint) + [I] * (4 - int(4 * hint)), prompt_variant="hint")
    d = stats.variant_deltas(frame(rows)).iloc[0]
    assert d["prompt_variant"] == "hint" and d["delta_mean"] == pytest.approx(0.25) and d["seeds"] == 2


def test_mcnemar_exact_by_hand():
    assert inference.mcnemar_exact(8, 1) == pytest.approx(2 * (1 + 9) / 2**9)
    assert inference.mcnemar_exact(0, 0) == 1.0


def test_paired_test_on_matched_instance_sets():
    rows = []
    for t in range(10):  # ten instance sets; first right on all, middle wrong on 9
        rows.append({"task": f"t{t}", "pattern": "majority_first", "verdict": C})
        rows.append({"task": f"t{t}", "pattern": "majority_middle", "verdict": C if t == 0 else I})
    rows.append({"task": "t99", "pattern": "majority_first", "verdict": C})  # unmatched: not a pair
    test = inference.paired_test(frame(rows), "majority_first", "majority_middle")
    assert test.test == "exact McNemar" and test.pairs == 10
    assert test.p_value == pytest.approx(2 / 2**9)


def test_paired_test_with_several_random_orders_uses_permutations():
    rows = []
    for t in range(8):
        rows += [{"task": f"t{t}", "pattern": "random", "order_seed": s, "verdict": C} for s in range(3)]
        rows.append({"task": f"t{t}", "pattern": "majority_middle", "verdict": I})
    test = inference.paired_test(frame(rows), "random", "majority_middle", n_perm=2000)
    assert test.test == "sign-flip permutation" and test.pairs == 8
    assert test.p_value < 0.02  # 2/256 exact; the permutation estimate is near it


def test_bootstrap_intervals():
    rows = [{"task": f"t{t}", "verdict": C if t % 2 else I} for t in range(40)]
    low, high = inference.bootstrap_accuracy(frame(rows))
    assert low < 0.5 < high and 0.25 < low and high < 0.75
    perfect = frame([{"task": f"t{t}"} for t in range(6)])
    assert inference.bootstrap_accuracy(perfect) == (1.0, 1.0)
    too_few = frame([{"task": f"t{t}"} for t in range(inference.MIN_PAIRS - 1)])  # no interval from 5 sets
    assert all(math.isnan(x) for x in inference.bootstrap_accuracy(too_few))
    nothing_valid = frame([{"task": f"t{t}", "verdict": X} for t in range(10)])  # crashed with IndexError before
    assert all(math.isnan(x) for x in inference.bootstrap_accuracy(nothing_valid))
    rows = [{"task": f"t{t}", "pattern": "majority_first"} for t in range(20)] + \
           [{"task": f"t{t}", "pattern": "majority_middle", "verdict": I} for t in range(20)]
    assert inference.bootstrap_gap(frame(rows), "majority_first", "majority_middle") == (1.0, 1.0)


def test_paired_test_with_too_few_pairs_is_not_testable():
    rows = cell(0, "majority_first", [C, C]) + cell(0, "majority_middle", [I, I])  # 2 sets, both favour first
    test = inference.paired_test(frame(rows), "majority_first", "majority_middle")
    assert test.test == "not testable" and test.pairs == 2 and math.isnan(test.p_value)
    rows = cell(0, "majority_first", [C] * 6) + cell(0, "majority_middle", [I] * 6)
    test = inference.paired_test(frame(rows), "majority_first", "majority_middle")
    assert test.test == "exact McNemar" and test.p_value == pytest.approx(2 / 2**6)


def test_all_tied_patterns_still_compare_two_patterns():
    rows = cell(0, "majority_first", [C, C]) + cell(0, "majority_middle", [C, C])
    gap = stats.best_worst_gap(frame(rows))
    assert gap.best != gap.worst and gap.delta == 0.0


def test_ties_follow_the_paper_pattern_order_and_are_all_named():
    """Alphabetically majority_edges < majority_first and majority_middle < soft_majority_middle: the
    paper's order (mip.experiment.instances.PATTERNS) picks the others, and the table names every tie."""
    rows = []
    for seed in (0, 1):
        rows += cell(seed, "majority_first", [C, C, I]) + cell(seed, "majority_edges", [C, C, I])  # 2/3: best
        rows += cell(seed, "soft_majority_middle", [C, I, I]) + cell(seed, "majority_middle", [C, I, I])  # 1/3: worst
        # 1/2 over two order seeds, on the same three tasks as every other pattern (Δ compares matched experiments)
        rows += cell(seed, "random", [C, I, C], order_seed=0) + cell(seed, "random", [I, C, I], order_seed=1)
    gap = stats.best_worst_gap(frame(rows))
    assert (gap.best, gap.worst) == ("majority_first", "majority_middle")
    assert gap.best_tied == ("majority_first", "majority_edges")
    assert gap.worst_tied == ("majority_middle", "soft_majority_middle")
    shown = tables.table2(stats.model_table(frame(rows)))["π⁺ / π⁻"].iloc[0]
    assert shown == "first = edges / middle = s.middle"  # short names; the table's text gives the legend
    # Every pattern tied: random (first in the paper's order) is π⁺, majority_first π⁻.
    even = cell(0, "majority_last", [C]) + cell(0, "random", [C], order_seed=0) + cell(0, "majority_first", [C])
    gap = stats.best_worst_gap(frame(even))
    assert (gap.best, gap.worst, gap.best_tied) == ("random", "majority_first", ("random", "majority_first", "majority_last"))
    # … and no pattern is worse: π⁻ reads "–" (docs/planted-models.md's unbiased row).
    assert tables.table2(stats.model_table(frame(even)))["π⁺ / π⁻"].iloc[0] == "random = first = last / –"


def test_reference_calculation_of_app_c4():
    ref = inference.reference_calculation(2000, 0.55, 0.9)
    assert (ref["n_maj"], ref["n_min"], ref["expected"]) == (1100, 900, 1080.0)
    assert ref["sd"] == pytest.approx(math.sqrt(180), rel=1e-12) and round(ref["sd"], 1) == 13.4
    assert round(ref["z_of_tie"], 1) == 6.0
    assert 1e-10 < ref["p_reversed_or_tied"] < 1e-8  # "on the order of one in a billion"
    assert ref["p_reversed"] < ref["p_reversed_or_tied"]
    # A tiny case checked by enumeration: n = 4, p = 0.75 (3 + 1), q = 0.5 → Z ~ Bin(4, 0.5); P(Z ≤ 2) = 11/16.
    assert inference.reference_calculation(4, 0.75, 0.5)["p_reversed_or_tied"] == pytest.approx(11 / 16)


def test_an_exact_mcnemar_p_keeps_its_significant_digits():
    """31 discordant pairs: p = 2 / 2^31 ≈ 9.3e-10, which the intervals table printed as 0."""
    from mip.analysis import slices
    from mip.analysis.report.sections import intervals

    rows = []
    for seed in range(31):
        rows += cell(seed, "majority_first", [C]) + cell(seed, "majority_last", [I])
    table, _ = intervals(slices.add_columns(frame(rows)), "n1_p0.6")  # the table and its cells' experiments
    assert table.loc[0, "test"] == "exact McNemar" and table.loc[0, "p_value"] == float(f"{2 / 2**31:.3g}") > 0
