"""`python audit.py` on a user's own CSV: the report, --help, and one-line refusals of bad input."""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest

from .conftest import REPO, run_entry
from .fake_server import FakeServer


def reviews(path, labels=("neg", "pos"), rows=60):
    texts = [f"What is {i} + {i % 7}?" for i in range(rows)]
    frame = pd.DataFrame({"review": texts, "stars": [labels[(i + i % 7) % 2] for i in range(rows)]})
    frame.to_csv(path, index=False)
    return path


def audit(*args, env=None, timeout=900, process=False):
    """``python audit.py args``: in this process (:func:`run_entry`), or with ``process`` in an
    interpreter of its own."""
    import os

    if not process:
        return run_entry("audit.py", *args, env=env)
    return subprocess.run([sys.executable, str(REPO / "audit.py"), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_line_error(proc) -> str:
    """The error a refused command printed: exit code 2, one line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


COLUMNS = ("audit.text_col=review", "audit.label_col=stars", "audit.labels=[neg,pos]")


def test_audit_through_a_server_reports_a_verdict_per_cell(tmp_path, results):
    data = reviews(tmp_path / "reviews.csv")
    with FakeServer() as server:
        proc = audit(f"audit.data={data}", *COLUMNS, "audit.question=Determine the majority parity label among the "
                     "values of all provided arithmetic expressions.", "audit.n=[10,20]", "audit.p=[0.6]",
                     "audit.seeds=[0,1,2]", "model=smollm2_135m_server", f"model.base_url={server.base_url}",
                     "model.model_id=fake-model", "model.tokenizer=null", "budget=smoke", "progress=false", process=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (results / "audit" / "reviews" / "audit.md").read_text()
    assert report.count("**Verdict:") == 2
    # The fake server is always right; 3 seeds × 2 labels = 6 matched sets: enough for a test.
    assert "no significant order effect found at this size" in report and "inconclusive" not in report
    for pattern in ("random", "majority_first", "soft_majority_middle"):
        assert pattern in report
    assert "95 % interval" in report and "cost:" in report
    # Each job saved its config as run.py's would: the run settings, no audit section.
    saved = next((results / "audit" / "reviews" / "jobs").glob("*/config.yaml")).read_text()
    assert "setting: audit" in saved and "\naudit:" not in saved and "audit_reviews" in saved


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_audit_offline_with_the_embedded_model(tmp_path, results):
    data = reviews(tmp_path / "small.csv", rows=30)
    proc = audit(f"audit.data={data}", *COLUMNS, "audit.n=[10]", "audit.p=[0.6]", "audit.seeds=[0]",
                 "model=smollm2_135m", "budget=smoke", "budget.max_tokens=16", "progress=false", process=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "**Verdict:" in (results / "audit" / "small" / "audit.md").read_text()


def test_help_lists_the_audit_options_and_the_groups(results):
    proc = audit("--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    for option in ("audit.data", "audit.text_col", "audit.label_col", "audit.labels", "audit.question",
                   "audit.instruction", "audit.n", "audit.p", "audit.seeds", "audit.out_dir", "audit.alpha"):
        assert f"  {option} " in proc.stdout, option
    assert "(now: [100, 500])" in proc.stdout
    assert re.search(r"^  model {2,}\S", proc.stdout, re.M) and re.search(r"^  strategy {2,}.*single_call", proc.stdout, re.M)
    assert not results.exists()  # help runs nothing


def test_a_typo_a_missing_file_an_empty_file_and_absent_labels_are_one_line_errors(tmp_path, results):
    empty, wrong = tmp_path / "empty.csv", reviews(tmp_path / "wrong.csv", labels=("bad", "good"))
    empty.write_text("")
    assert "unknown key 'dta' (did you mean audit.data?)" in one_line_error(audit("dta=x.csv"))
    assert "does not exist" in one_line_error(audit("audit.data=no-such-file.csv", *COLUMNS, "model=mock"))
    assert "is empty" in one_line_error(audit(f"audit.data={empty}", *COLUMNS, "model=mock"))
    assert "not the label(s) ['neg', 'pos']" in one_line_error(audit(f"audit.data={wrong}", *COLUMNS, "model=mock"))
    assert not (results / "store").exists()


def test_a_paper_model_on_the_default_smoke_budget_is_refused_unless_a_budget_is_named(tmp_path, results):
    """320 tokens cut off a reasoning model's every answer, each still paid for: refused, one line."""
    from mip.config import AuditConfig, BudgetConfig
    from mip.entry.audit_command import check_budget

    data = reviews(tmp_path / "reviews.csv")
    refused = one_line_error(audit(f"audit.data={data}", *COLUMNS, "model=gpt_oss_120b"))
    assert "budget=smoke, audit.py's default, caps each answer at 320 tokens" in refused
    assert "Name a budget: budget=20k (the paper's) or budget=smoke to run it anyway." in refused
    assert not (results / "store").exists() and not list((results / "audit").rglob("*.*"))  # no job, no report
    smoke, paper = AuditConfig(budget=BudgetConfig(name="smoke", max_tokens=320)), REPO / "conf/model/gpt_oss_120b.yaml"
    with pytest.raises(ValueError, match="budget=20k"):
        check_budget(smoke, paper, ["model=gpt_oss_120b", "audit.data=x.csv"])
    for named in (["budget=smoke"], ["budget=20k"], ["budget.max_tokens=2000"]):
        check_budget(smoke, paper, named)  # the command chose it
    check_budget(smoke, REPO / "conf/model/smollm2_135m.yaml", [])  # not a paper model: the offline default


@pytest.mark.parametrize("args,message", [
    (["dta=x.csv"], "unknown key 'dta' (did you mean audit.data?); `python audit.py --help` lists the options."),
    (["audit.label=[a,b]"], "(did you mean audit.labels?)"),
    (["model=mock", "model.basurl=x"], "(did you mean model.base_url?)"),
    (["+audit.foo=1"], "unknown key 'audit.foo'"),
    (["+experiment=demo"], "unknown key 'experiment'"),
    (["n=100"], "give the sizes as audit.n=[100,500]"),
    (["seed=1"], "audit.seeds=[0,1,2]"),
    (["pattern=majority_first"], "the audit runs all seven patterns"),
    (["task=sentiment"], "builds its task from audit.data"),
])
def test_overrides_the_audit_does_not_take_are_refused_before_composing(capsys, args, message):
    from mip.entry.audit_command import SET_BY_THE_AUDIT
    from mip.entry.cli import check_overrides
    from mip.config import AuditConfig

    ok = ["--help", "-m", "model=mock", "model.base_url=x", "audit.data=a.csv", "hydra.run.dir=x",
          "hydra/launcher=local", "budget.max_tokens=5", "~audit.instruction", "paths.results_dir=r"]
    check_overrides(ok, AuditConfig, "audit.py", SET_BY_THE_AUDIT)  # passes: known keys, Hydra's own
    with pytest.raises(SystemExit) as exit:
        check_overrides(args, AuditConfig, "audit.py", SET_BY_THE_AUDIT)
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and message in err


@pytest.mark.parametrize("case,message", [
    ("no table", "Name the table to audit: audit.data="),
    ("one label", "Name exactly two distinct labels"),
    ("unreadable format", "Cannot read notes.txt"),
    ("one label in the data", "not the label(s) ['pos']"),
    ("header only", "is empty: it has no rows"),
    ("no column", "has no column 'review'"),
])
def test_bad_tables_and_labels_are_refused_before_any_job(tmp_path, results, case, message):
    from mip.tools.audit import run_audit
    from mip.config import AuditConfig, AuditOptions
    from mip.data import DataError

    path = tmp_path / "t.csv"
    options = AuditOptions(data=str(path), text_col="review", label_col="stars", labels=["neg", "pos"])
    if case == "no table":
        options.data = None
    elif case == "one label":
        options.labels = ["neg"]
    elif case == "unreadable format":
        options.data = str(tmp_path / "notes.txt")
        (tmp_path / "notes.txt").write_text("neg\n")
    elif case == "one label in the data":
        pd.DataFrame({"review": ["a", "b"], "stars": ["neg", "neg"]}).to_csv(path, index=False)
    elif case == "header only":
        path.write_text("review,stars\n")
    else:
        pd.DataFrame({"text": ["a"], "stars": ["neg"]}).to_csv(path, index=False)
    with pytest.raises((ValueError, DataError), match=re.escape(message)):
        run_audit(AuditConfig(audit=options))
    assert not results.exists()


def test_sizes_the_data_cannot_fill_are_left_out_with_a_note(tmp_path, results):
    data = reviews(tmp_path / "few.csv", rows=24)
    proc = audit(f"audit.data={data}", *COLUMNS, "audit.n=[10,100]", "audit.p=[0.6]", "audit.seeds=[0]", "model=mock",
                 "progress=false")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = (results / "audit" / "few" / "audit.md").read_text()
    assert "n=100, p=0.6 left out" in report and report.count("**Verdict:") == 1


def test_too_few_sets_give_an_inconclusive_verdict_not_a_negative_one():
    from mip.tools.audit import verdict

    from .test_stats import cell, frame

    rows = cell(0, "majority_first", ["correct", "correct"]) + cell(0, "majority_middle", ["incorrect", "incorrect"])
    sentence, numbers = verdict(frame(rows), 0.05)
    assert sentence.startswith("inconclusive") and "2 matched" in sentence and "100 pp" in sentence
    assert "no significant" not in sentence and numbers["pairs"] == 2
