"""Instance IDs mentioned in reasoning traces, coverage bins and per-ID mention rates."""

from __future__ import annotations

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from mip.analysis.coverage import coverage, coverage_bin, coverage_table, mention_rates, mentioned_ids, mentioned_ids_regex

from .test_stats import frame

# Excerpts in the style of App. E.1, with the IDs each one mentions written out.
EXCERPTS = [
    ("I'll go instance by instance.Instance 1: \"on the java wave\" - place.[...]Instance 200: \"ported to java\" - "
     "programming language.", 2000, {1, 200}),
    ("Let me look at instances 1-40 first, then every 50th one: 50, 100, 150.", 2000, {1, 40, 50, 100, 150}),
    ("1900: prog (java)[... 1901-1999 ...]2000: prog (java)", 2000, {1900, 1901, 1999, 2000}),
    ("Instance 1000: place. So 1,000 of 2000? Roughly 3.5 per 10, x2 is odd, the 200th is prog.", 2000, {1000, 2000, 10}),
    ("Instance 10: ... -> \"the\" appears 2 times. Count 2500 is out of range.", 2000, {10, 2}),
    ("", 100, set()),
]

# The rule's cases (mip.analysis.coverage's docstring), most in the words of the paper's traces (App. E.1), each with
# what it mentions: before this rule a comma list mentioned nothing, a number after "." or "," was dropped
# ("tally.1: place") and the tie answer "-1" counted as instance 1.
RULE = [
    ("I'll go through the list in chunks and tally.1: place[...]100: prog", {1, 100}),
    ("Then choose the majority label. If tied, answer -1.", set()),
    ('If tied, `{"answer": "-1"}`. Also +3 and \u22122 are signed.', set()),
    ("Instances 1,2,3 are positive; 12,40,7 negative.", {1, 2, 3, 7, 12, 40}),
    ("Labels: positive,5 and negative.6 follow.", {5, 6}),
    ("Instance 40: Steve = Jim - 8 = 102. Total = 102+110+107 = 319. Odd.", {8, 40, 102, 107, 110, 319}),
    ("Instance 1-444: Mostly locations. x-2 and id-9", {1, 444, 2, 9}),
    ("it checks instances 1,900 to 2,000; 12,345 and 0.55 and 1.2.3 are numbers", set()),
    ("its output budget is exhausted after the 1,954th instance", set()),
    ("(-1) [7] 8… –9", {7, 8, 9}),
]


@pytest.mark.parametrize("trace,expected", RULE)
def test_the_written_rule(trace, expected):
    assert mentioned_ids(trace, 2000) == expected
    assert mentioned_ids_regex(trace, 2000) == expected


@pytest.mark.parametrize("trace,n,expected", EXCERPTS)
def test_mentioned_ids(trace, n, expected):
    assert mentioned_ids(trace, n) == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list("0123456789 .,-+:_xé…\n\u2212") + ["Instance ", "th", "1,000", "٣", "12,3"]), max_size=120).map("".join),
       st.integers(1, 3000))
def test_the_vectorised_pass_follows_the_regex_rule(trace, n):
    assert mentioned_ids(trace, n) == mentioned_ids_regex(trace, n)


def test_ids_outside_one_to_n_do_not_count():
    assert mentioned_ids("0 1 20 21 99999999999", 20) == {1, 20}


@pytest.mark.parametrize("share,bin_", [(0.0, "<25%"), (0.2499, "<25%"), (0.25, "<75%"), (0.74, "<75%"),
                                        (0.75, "<100%"), (0.999, "<100%"), (1.0, "=100%")])
def test_bins(share, bin_):
    assert coverage_bin(share) == bin_


def test_coverage_share():
    assert coverage("Instance 1, Instance 2 and 4.", 4) == 0.75


def test_coverage_table_counts_and_accuracy_per_bin():
    every = " ".join(str(i) for i in range(1, 21))
    rows = [
        {"reasoning": "1 2", "verdict": "incorrect"},        # 10 % → <25%
        {"reasoning": "1 2 3", "verdict": "correct"},        # 15 % → <25%
        {"reasoning": " ".join(map(str, range(1, 11))), "verdict": "correct"},  # 50 % → <75%
        {"reasoning": every, "verdict": "correct"},          # 100 %
        {"reasoning": every, "verdict": "invalid"},          # invalid: left out
        {"reasoning": None, "verdict": "correct"},           # no trace: its own bin
        {"reasoning": "", "verdict": "incorrect"},           # an empty trace is no trace
    ]
    table = coverage_table(frame(rows)).set_index("bin")
    # The paper's bins add up to every valid run: 6 valid experiments, none dropped.
    assert list(table.index) == ["<25%", "<75%", "<100%", "=100%", "no trace"]
    assert list(table["experiments"]) == [2, 1, 0, 1, 2] and table["experiments"].sum() == 6
    assert table.loc["<25%", "accuracy"] == 0.5 and table.loc["=100%", "accuracy"] == 1.0
    assert table.loc["no trace", "accuracy"] == 0.5 and table.loc["no trace", "share"] == pytest.approx(2 / 6)
    assert table["share"].sum() == pytest.approx(1.0)


def test_mention_rates_per_position_and_pattern():
    rows = [{"reasoning": "1 2 3", "pattern": "random"}, {"reasoning": "1 20", "pattern": "random"},
            {"reasoning": "5", "pattern": "majority_first"}]
    rates = mention_rates(frame(rows), 20)
    random = rates[rates["pattern"] == "random"].set_index("position")["rate"]
    assert random[1] == 1.0 and random[2] == 0.5 and random[20] == 0.5 and random[10] == 0.0
    first = rates[rates["pattern"] == "majority_first"].set_index("position")
    assert first.loc[5, "rate"] == 1.0 and first.loc[5, "experiments"] == 1
    pooled = rates[rates["pattern"] == "all patterns"].set_index("position")
    assert pooled.loc[1, "rate"] == pytest.approx(2 / 3) and pooled.loc[1, "experiments"] == 3


def test_coverage_by_model_and_budget():
    rows = [{"reasoning": "1 2", "budget": "20k"}, {"reasoning": " ".join(map(str, range(1, 21))), "budget": "100k"}]
    table = coverage_table(frame(rows), ["model", "budget"])
    assert set(zip(table["budget"], table["bin"].astype(str), table["experiments"])) >= {("20k", "<25%", 1), ("100k", "=100%", 1)}
