"""`python -m mip.audit` on a user's own CSV: the report, and refusals of bad tables."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from .conftest import REPO
from .fake_server import FakeServer


def reviews(path, labels=("neg", "pos"), rows=60):
    texts = [f"What is {i} + {i % 7}?" for i in range(rows)]
    frame = pd.DataFrame({"review": texts, "stars": [labels[(i + i % 7) % 2] for i in range(rows)]})
    frame.to_csv(path, index=False)
    return path


def audit(*args, env=None, timeout=900):
    import os

    return subprocess.run([sys.executable, "-m", "mip.audit", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_audit_through_a_server_reports_a_verdict_per_cell(tmp_path, results):
    data = reviews(tmp_path / "reviews.csv")
    with FakeServer() as server:
        proc = audit(f"data={data}", "text_col=review", "label_col=stars", "labels=[neg,pos]",
                     "question=Determine the majority parity label among the values of all provided arithmetic expressions.",
                     "n=[10,20]", "p=[0.6]", "seeds=[0,1,2]", "model=smollm2_135m_server", f"model.base_url={server.base_url}",
                     "model.model_id=fake-model", "budget=smoke", "progress=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (results / "audit" / "reviews" / "audit.md").read_text()
    assert report.count("**Verdict:") == 2
    # The fake server is always right; 3 seeds × 2 labels = 6 matched sets: enough for a test.
    assert "no significant order effect found at this size" in report and "inconclusive" not in report
    for pattern in ("random", "majority_first", "soft_majority_middle"):
        assert pattern in report
    assert "95 % interval" in report and "cost:" in report


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_audit_offline_with_the_embedded_model(tmp_path, results):
    data = reviews(tmp_path / "small.csv", rows=30)
    proc = audit(f"data={data}", "text_col=review", "label_col=stars", "labels=[neg,pos]", "n=[10]", "p=[0.6]",
                 "seeds=[0]", "model=smollm2_135m", "budget=smoke", "budget.max_tokens=16", "progress=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "**Verdict:" in (results / "audit" / "small" / "audit.md").read_text()


@pytest.mark.parametrize("case,message", [
    ("one_label", "not the label"),
    ("empty", "is empty"),
    ("wrong_labels", "not the label"),
    ("no_column", "has no column"),
])
def test_bad_tables_are_refused_clearly(tmp_path, results, case, message):
    path = tmp_path / f"{case}.csv"
    if case == "one_label":
        pd.DataFrame({"review": ["a", "b"], "stars": ["neg", "neg"]}).to_csv(path, index=False)
    elif case == "empty":
        path.write_text("")
    elif case == "wrong_labels":
        reviews(path, labels=("bad", "good"))
    else:
        pd.DataFrame({"text": ["a"], "stars": ["neg"]}).to_csv(path, index=False)
    proc = audit(f"data={path}", "text_col=review", "label_col=stars", "labels=[neg,pos]", "model=mock")
    assert proc.returncode == 2 and message in proc.stderr
    assert not (results / "store").exists()


def test_sizes_the_data_cannot_fill_are_left_out_with_a_note(tmp_path, results):
    data = reviews(tmp_path / "few.csv", rows=24)
    proc = audit(f"data={data}", "text_col=review", "label_col=stars", "labels=[neg,pos]", "n=[10,100]", "p=[0.6]",
                 "seeds=[0]", "model=mock", "progress=false")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = (results / "audit" / "few" / "audit.md").read_text()
    assert "n=100, p=0.6 left out" in report and report.count("**Verdict:") == 1


def test_too_few_sets_give_an_inconclusive_verdict_not_a_negative_one():
    from mip.audit import verdict

    from .test_stats import cell, frame

    rows = cell(0, "majority_first", ["correct", "correct"]) + cell(0, "majority_middle", ["incorrect", "incorrect"])
    sentence, numbers = verdict(frame(rows), 0.05)
    assert sentence.startswith("inconclusive") and "2 matched" in sentence and "100 pp" in sentence
    assert "no significant" not in sentence and numbers["pairs"] == 2
