"""The demo's closing summary, and the demo end to end (slow; `make run` from a fresh clone, install
included, is the slow newcomer test in test_faults)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pandas as pd
import pytest
from PIL import Image

from mip.tools.embedded_demo import summary

from .conftest import REPO


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


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_demo_ends_with_what_the_numbers_show_and_where_everything_is(results):
    """`python -m mip.demo` (what `make run` runs) end to end, without the install: the real
    model's verdicts, both reports, the attribution figure and the closing summary."""
    proc = subprocess.run([sys.executable, "-m", "mip.demo"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "MIP_RESULTS_DIR": str(results)}, timeout=1700)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert out.count("== sweep summary ==") == 2 and "7 job(s), 14 experiments" in out and "42 job(s)" in out
    valid = re.search(r"SmolLM2-135M: (\d+) of 14 experiments valid", out)
    assert valid and int(valid.group(1)) >= 12, out[-3000:]  # nearly all: the budget holds what it writes
    assert "no Δ between patterns can be told from chance" in out
    assert re.search(r"simulated_first_k \(simulated, not an LLM\): accuracy [\d.]+ %, Δ [1-9]", out)
    assert "simulated_unbiased (simulated, not an LLM): accuracy 100.0 %, Δ 0.0 pp" in out
    demo = results / "demo"
    for report in (demo / "report" / "report.md", demo / "simulated" / "report.md"):
        assert f"Report: {report}" in out and report.is_file()
    assert list((demo / "attribution" / "figures").glob("profile_*.png"))
    for report in (demo / "report", demo / "simulated"):  # every figure a report links, encoded
        linked = re.findall(r"\((figures/[^)]+\.png)\)", (report / "report.md").read_text())
        assert len(linked) >= 5
        for png in linked:
            with Image.open(report / png) as image:
                assert image.format == "PNG" and min(image.size) > 300
            assert (report / png).with_suffix(".pdf").read_bytes().startswith(b"%PDF")
    assert f"Attribution: {demo / 'attribution'}" in out and "python -m mip.show" in out
    assert "The demo took" in out  # the time itself is not asserted
    assert not proc.stderr.strip() or "Traceback" not in proc.stderr
    # A second run finds every experiment stored and calls nothing.
    again = subprocess.run([sys.executable, "-m", "mip.demo"], cwd=REPO, capture_output=True, text=True,
                           env={**os.environ, "MIP_RESULTS_DIR": str(results)}, timeout=1700)
    assert again.returncode == 0 and "0 run by this command, 14 found already stored" in again.stdout
