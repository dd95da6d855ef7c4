"""The demo's closing summary (the whole `make run` is the slow newcomer test in test_faults)."""

from __future__ import annotations

import pandas as pd

from mip.demo import summary


def test_the_summary_says_what_the_numbers_show_and_cannot_show(tmp_path):
    columns = ["model", "experiments", "valid", "acc", "delta", "best", "worst", "rests on"]
    for folder, rows in {"report": [["smollm2_135m", 18, 18, 0.333, 0.5, "majority_first", "random", "2 sets"]],
                         "simulated": [["simulated_first_k", 54, 54, 0.778, 1.0, "majority_edges", "majority_last",
                                        "6 sets, 3 paired seeds"],
                                       ["simulated_unbiased", 54, 54, 1.0, 0.0, "majority_edges", "majority_first",
                                        "6 sets, 3 paired seeds"]]}.items():
        tables = tmp_path / "demo" / folder / "tables"
        tables.mkdir(parents=True)
        pd.DataFrame(rows, columns=columns).to_csv(tables / "table2_numbers_n10_p0.6.csv", index=False)
    text = summary(tmp_path)
    assert "SmolLM2-135M: 18 of 18 experiments valid" in text and "Δ 50.0 pp" in text
    assert "no Δ between patterns can be told from chance" in text
    assert "simulated_first_k (simulated, not an LLM): accuracy 77.8 %, Δ 100.0 pp" in text
    assert "python -m mip.show" in text
