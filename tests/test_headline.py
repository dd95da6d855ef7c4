"""The headline analyze.py prints: every tied pattern named, '–' where no pattern is worse, and
at most 120 columns wide on a three-model core grid (ties listed under the table, not in it)."""

from __future__ import annotations

from mip.analysis import slices
from mip.analysis.headline import WIDTH, headline, render

from .test_stats import C, I, cell, frame

PATTERNS = ["random", "majority_first", "majority_last", "majority_edges", "majority_middle",
            "soft_majority_edges", "soft_majority_middle"]
#: Correct per pattern: a first-9 reader at n = 2,000 (π⁻ majority_last tied with majority_middle), a
#: reader of all (every pattern tied), and one with a single worst pattern.
PLANTED = {"simulated_first_k_with_a_long_name": {"majority_last": I, "majority_middle": I},
           "simulated_unbiased": {}, "qwen36_35b [decomposed]": {"soft_majority_middle": I}}


def _grid():
    rows = []
    for model, wrong in PLANTED.items():
        for seed in (0, 1, 2):
            for pattern in PATTERNS:
                rows += cell(seed, pattern, [wrong.get(pattern, C)] * 2, model=model,
                             order_seed=0 if pattern == "random" else None)
    return slices.add_columns(frame(rows))


def test_the_headline_names_every_tie_and_a_dash_where_none_is_worse():
    table = headline(_grid()).set_index("model")
    assert table.loc["simulated_first_k_with_a_long_name", "π⁻"] == "majority_last = majority_middle"  # one, before
    assert table.loc["simulated_unbiased", "π⁻"] == "–"  # majority_first, before
    assert table.loc["simulated_unbiased", "π⁺"] == " = ".join(PATTERNS)
    assert table.loc["qwen36_35b [decomposed]", "π⁻"] == "soft_majority_middle"


def test_the_printed_headline_fits_120_columns_with_ties_under_the_table():
    text = render(headline(_grid()))
    assert max(len(line) for line in text.splitlines()) <= WIDTH  # ~190 before
    assert "* simulated_first_k_with_a_long_name π⁻: majority_last = majority_middle" in text
    assert "first = majority_first" in text and "s.middle = soft_majority_middle" in text  # the legend
    row = next(line for line in text.splitlines() if line.startswith("simulated_unbiased"))
    assert row.split()[-3:] == ["random*", "–", "6"]
