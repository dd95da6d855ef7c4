"""Reports beside their inputs, through the real entry points: an analysis
of a sweep writes into that sweep's folder, analyze.py and attribute.py take a bare folder as
well as ``results=[…]``, and no analysis silently replaces another's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import compose, run_entry

SWEEP = ("-m", "task=arith", "n=20", "p=0.6", "pattern=majority_first,majority_last", "seed=0", "budget=smoke",
         "progress=false")


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Two sweeps of two simulated models into one results folder: ``results``, ``a``, ``b``."""
    results = tmp_path_factory.mktemp("reports") / "results"
    env = {"MIP_RESULTS_DIR": str(results)}
    for model in ("simulated_first_k", "simulated_unbiased"):
        ran = run_entry("run.py", *SWEEP, f"model={model}", env=env)
        assert ran.returncode == 0, ran.stderr[-2000:]
    a, b = sorted((results / "sweeps").glob("*/*"), key=lambda d: json.loads(next(d.rglob("job.json")).read_text())["model"])
    return {"results": results, "a": a, "b": b, "env": env}


def _models(report: Path) -> set[str]:
    return set(re.findall(r"simulated_(?:first_k|unbiased)", report.read_text()))


def test_two_analyses_of_two_sweeps_leave_two_reports(sweeps, figures_unencoded):
    """`python analyze.py <sweep>` (a Hydra lexer traceback before) writes <sweep>/report, each
    of its own sweep (before, both went to results/report, the second over the first)."""
    for which in ("a", "b"):
        ran = run_entry("analyze.py", str(sweeps[which]), env=sweeps["env"])
        assert ran.returncode == 0, ran.stderr[-2000:]
        assert f"Report: {sweeps[which] / 'report' / 'report.md'}" in ran.stdout
    assert _models(sweeps["a"] / "report" / "report.md") == {"simulated_first_k"}
    assert _models(sweeps["b"] / "report" / "report.md") == {"simulated_unbiased"}
    assert not (sweeps["results"] / "report").exists()
    # the sweep with a report in it still reads back as its own two jobs' experiments
    summary = run_entry("-m", "mip.summary", str(sweeps["a"]))
    assert summary.returncode == 0 and summary.stdout.startswith("2 job(s)"), summary.stdout[:300]


def test_an_analysis_of_other_inputs_into_the_same_out_dir_is_refused(sweeps, tmp_path, figures_unencoded):
    out = tmp_path / "shared-out"
    first = run_entry("analyze.py", f"results=[{sweeps['a']}]", f"out_dir={out}")
    assert first.returncode == 0, first.stderr[-2000:]
    before = (out / "report.md").read_text()
    again = run_entry("analyze.py", f"results=[{sweeps['a']}]", f"out_dir={out}")  # the same analysis: rewritten
    assert again.returncode == 0, again.stderr[-2000:]
    other = run_entry("analyze.py", str(sweeps["b"]), f"out_dir={out}")
    assert other.returncode == 2 and other.stderr.count("\n") == 1, other.stderr
    assert "holds the output of another analysis" in other.stderr and str(sweeps["a"]) in other.stderr
    assert (out / "report.md").read_text() == before
    sliced = run_entry("analyze.py", f"results=[{sweeps['a']}]", f"out_dir={out}", "where.pattern=majority_last")
    assert sliced.returncode == 2 and "other slices" in sliced.stderr, sliced.stderr


def test_stores_and_several_folders_get_an_out_dir_named_after_them(sweeps, tmp_path):
    results = str(sweeps["results"])
    default = compose(f"paths.results_dir={results}", config_name="analyze")
    assert default.out_dir == f"{results}/report"  # the default store: where it always went
    both = compose(f"paths.results_dir={results}", f"results=[{sweeps['a']},{sweeps['b']}]", config_name="analyze")
    other = compose(f"paths.results_dir={results}", f"results=[{tmp_path / 'store'}]", config_name="analyze")
    assert both.out_dir.startswith(f"{results}/report/{sweeps['a'].name}+{sweeps['b'].name}-")
    assert other.out_dir.startswith(f"{results}/report/store-") and other.out_dir != both.out_dir
    attribution = compose(f"results=[{sweeps['a']}]", "model=smollm2_135m", config_name="attribute")
    assert attribution.out_dir == f"{sweeps['a']}/attribution/smollm2_135m"


def test_attribute_takes_a_bare_folder(sweeps, tmp_path):
    """The folder is read (the weights it is pointed at are missing, said only once it found records)."""
    ran = run_entry("attribute.py", "model=smollm2_135m", "records_model=simulated_first_k", "task=arith",
                    str(sweeps["a"]), f"weights={tmp_path / 'no-weights'}", env=sweeps["env"])
    assert ran.returncode == 2 and "No weights for smollm2_135m" in ran.stderr, ran.stderr


@pytest.mark.parametrize("args, said", [
    (("no/such/folder",), "'no/such/folder' is no folder"),
    (("{a}", "results=[{a}]"), "either bare or as results=[…], not both"),
])
def test_a_bare_word_that_is_no_folder_is_one_line(sweeps, args, said):
    ran = run_entry("analyze.py", *(a.format(a=sweeps["a"]) for a in args))
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1 and said in ran.stderr, ran.stderr


def test_wandb_analyses_get_an_out_dir_named_after_their_inputs(sweeps):
    """`analyze.py source=wandb …` wrote into results/report whatever it read, so the analysis
    of a second W&B group replaced the first's report."""
    results = str(sweeps["results"])

    def out(*args: str) -> str:
        return compose(f"paths.results_dir={results}", "source=wandb", *args, config_name="analyze").out_dir

    one = out("wandb.project=mip", "wandb.group=sweeps/2026-11-30/10-00-00-3f9a1c")
    other = out("wandb.project=mip", "wandb.group=sweeps/2026-12-01/09-00-00-000000")
    assert one.startswith(f"{results}/report/wandb-mip+sweeps_2026-11-30_10-00-00-3f9a1c-")
    assert other.startswith(f"{results}/report/wandb-mip+sweeps_2026-12-01_09-00-00-000000-")
    tagged = out("wandb.project=mip", "wandb.entity=lab", "wandb.tags=[core]")
    assert tagged.startswith(f"{results}/report/wandb-lab+mip+core-") and len({one, other, tagged}) == 3
    # offline run folders: beside one sweep (its local report keeps <sweep>/report), else named after them
    assert out(f"results=[{sweeps['a']}]") == f"{sweeps['a']}/report-wandb"
    assert out("results=[results/sweeps]").startswith(f"{results}/report/wandb-sweeps-")
    assert out() != compose(f"paths.results_dir={results}", config_name="analyze").out_dir


def _hydra_files(folder: Path) -> dict[str, bytes]:
    """An out_dir's .hydra/ files, logs and note of its inputs, as bytes."""
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in [*(folder / ".hydra").iterdir(), *folder.glob("*.log"), *folder.glob(".inputs.json")]}


def test_a_refused_analysis_leaves_the_reports_config_and_log_as_they_were(sweeps, tmp_path, figures_unencoded):
    """Hydra rewrote the out_dir's .hydra/ (with the refused command's results) and its log before
    analyze.py's check refused; the check now comes before Hydra writes."""
    out = tmp_path / "kept"
    first = run_entry("analyze.py", f"results=[{sweeps['a']}]", f"out_dir={out}")
    assert first.returncode == 0, first.stderr[-2000:]
    before = _hydra_files(out)
    assert ".hydra/config.yaml" in before and any(name.endswith(".log") for name in before)
    for refused in ((str(sweeps["b"]), f"out_dir={out}"),
                    (f"results=[{sweeps['a']}]", f"out_dir={out}", "where.pattern=majority_last"),
                    (f"results=[{tmp_path / 'empty'}]", f"out_dir={out}")):
        (tmp_path / "empty").mkdir(exist_ok=True)
        ran = run_entry("analyze.py", *refused)
        assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
        assert _hydra_files(out) == before, refused


def test_a_refused_analysis_into_a_new_out_dir_leaves_no_folder(sweeps, tmp_path):
    """Refused inside analyze.py (a folder without records): the out_dir Hydra made is removed."""
    (tmp_path / "empty").mkdir()
    ran = run_entry("analyze.py", f"results=[{tmp_path / 'empty'}]", f"out_dir={tmp_path / 'new'}")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert not (tmp_path / "new").exists()


def test_a_refused_attribution_leaves_the_out_dir_as_it_was(sweeps, tmp_path):
    """attribute.py: an out_dir of another attribution is refused before Hydra writes; missing
    weights (refused after Hydra wrote) put its .hydra/ and log back."""
    out = tmp_path / "attribution"
    args = ("model=smollm2_135m", "records_model=simulated_first_k", "task=arith", f"out_dir={out}")
    first = run_entry("attribute.py", *args, str(sweeps["a"]), f"weights={tmp_path / 'no-weights'}")
    assert first.returncode == 2 and "No weights" in first.stderr, first.stderr
    assert not out.exists()  # refused inside, into a new folder: none is left
    (out / ".hydra").mkdir(parents=True)  # an attribution of sweep a written there before
    (out / ".hydra" / "config.yaml").write_text("a report's config\n")
    (out / "attribute.log").write_text("a report's log\n")
    from mip.analysis.out_dirs import claim
    from mip.attribution.replay import attribution_inputs

    assert claim(out, attribution_inputs(compose(f"results=[{sweeps['a']}]", *args, config_name="attribute"))) is None
    before = _hydra_files(out)
    again = run_entry("attribute.py", *args, str(sweeps["a"]), f"weights={tmp_path / 'other-weights'}")
    assert again.returncode == 2 and "No weights" in again.stderr, again.stderr
    assert _hydra_files(out) == before
    other = run_entry("attribute.py", *args, str(sweeps["b"]), f"weights={tmp_path / 'no-weights'}")
    assert other.returncode == 2 and "holds the output of another analysis" in other.stderr, other.stderr
    assert _hydra_files(out) == before
