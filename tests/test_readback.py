"""Every folder mip writes is handed back to it, and nothing read back is pooled,
through the real entry points run in this process (conftest.run_entry).

One store holds a sweep of two simulated models (a planted first-k reader and an unbiased one)
at n = 20, p = 0.6, and a single job at another (n, p); analyze.py, attribute.py, mip.summary
and mip.show read the sweep folder, a job folder or the store, each exactly its own experiments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from mip.analysis import stats
from mip.experiment.instances import PATTERNS
from mip.store import iter_records

from .conftest import compose, run_entry

SWEEP = ("-m", "model=simulated_first_k,simulated_unbiased", "task=arith", "n=20", "p=0.6", "pattern=glob(*)", "seed=0",
         "budget=smoke", "progress=false")
JOB = ("model=simulated_first_k", "task=arith", "n=10", "p=0.7", "pattern=majority_last", "seed=0", "budget=smoke", "progress=false")


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The sweep's closing output and folders: ``results``, ``sweep``, ``job``."""
    results = tmp_path_factory.mktemp("readback") / "results"
    env = {"MIP_RESULTS_DIR": str(results)}
    sweep = run_entry("run.py", *SWEEP, env=env)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    job = run_entry("run.py", *JOB, env=env)
    assert job.returncode == 0, job.stderr[-2000:]
    [sweep_dir] = (results / "sweeps").glob("*/*")
    [job_dir] = (results / "runs").glob("*/*")
    return {"results": results, "sweep": sweep_dir, "job": job_dir, "sweep_out": sweep.stdout, "env": env}


def _keys(folder: Path) -> set[str]:
    return {k for m in folder.rglob("job.json") for k in json.loads(m.read_text())["keys"]}


def _accuracy(folder: Path, keys: set[str]) -> dict[str, dict[str, float]]:
    """Valid-only accuracy (%) per model and pattern of the records ``keys``, counted here from
    the record files themselves (one selection seed: the mean over seeds is this ratio)."""
    tally: dict = {}
    for r in iter_records([folder]):
        if r.key in keys and r.verdict != "invalid":
            cell = tally.setdefault(r.experiment.model, {}).setdefault(r.experiment.pattern, [0, 0])
            cell[0] += r.verdict == "correct"
            cell[1] += 1
    return {m: {p: round(100 * c / v, 1) for p, (c, v) in cells.items()} for m, cells in tally.items()}


def _experiments(report: Path) -> int:
    return int(re.search(r"^(\d+) experiments from", report.read_text(), re.M).group(1))


# ---------------------------------------------------------------------------- item 2: folders read back
@pytest.mark.parametrize("which", ["sweep", "job", "store"])
def test_analyze_reads_a_sweep_a_job_or_a_store_folder_exactly(ran, which, tmp_path, figures_unencoded):
    folder = ran["results"] / "store" if which == "store" else ran[which]
    out = tmp_path / "report"
    proc = run_entry("analyze.py", f"results=[{folder}]", f"out_dir={out}")
    assert proc.returncode == 0, proc.stderr  # a sweep folder: "No records found in …" before
    want = len(_keys(ran["sweep"]) | _keys(ran["job"])) if which == "store" else len(_keys(folder))
    assert _experiments(out / "report.md") == want
    assert want == {"sweep": 36, "job": 2, "store": 38}[which]


def test_summary_and_show_read_a_sweep_a_job_or_a_store_folder(ran):
    sweep = run_entry("-m", "mip.summary", str(ran["sweep"]))
    assert sweep.returncode == 0 and sweep.stdout.startswith("14 job(s), 36 experiments")
    job = run_entry("-m", "mip.summary", str(ran["job"]))
    assert job.returncode == 0 and job.stdout.startswith("1 job(s), 2 experiments") and "n=10 p=0.7" in job.stdout
    store = run_entry("-m", "mip.summary", str(ran["results"] / "store"))
    assert store.returncode == 0 and store.stdout.startswith("38 stored record(s)")  # "No job manifests" before
    for folder, count in [(ran["sweep"], 36), (ran["job"], 2), (ran["results"] / "store", 38)]:
        shown = run_entry("-m", "mip.show", str(folder))
        assert shown.returncode == 0 and shown.stdout.startswith(f"{count} records:"), shown.stderr


def test_attribute_reads_a_sweep_folder(ran, tmp_path):
    """attribute.py takes the sweep's records of the model (before: "No records of model …");
    the weights it is pointed at are missing, which it says only once it has found records."""
    proc = run_entry("attribute.py", "model=smollm2_135m", "records_model=simulated_first_k", "task=arith",
                     f"results=[{ran['sweep']}]", f"weights={tmp_path / 'no-weights'}", f"out_dir={tmp_path / 'attr'}",
                     env=ran["env"])
    assert proc.returncode == 2 and "No weights for smollm2_135m" in proc.stderr, proc.stderr
    from mip.attribution.replay import eligible
    from mip.config import AttributeConfig

    cfg = AttributeConfig(model=compose("model=smollm2_135m").model, task=compose("task=arith").task,
                          results=[str(ran["job"])], records_model="simulated_first_k")
    assert {r.key for r in eligible(cfg)} == _keys(ran["job"])  # the job's own two, not the store's 20


@pytest.mark.parametrize("program", ["analyze.py", "attribute.py", "mip.summary", "mip.show"])
def test_a_folder_mip_did_not_write_is_one_line_saying_what_to_pass(program, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("not mip's")
    args = {"analyze.py": (f"results=[{folder}]", f"out_dir={tmp_path / 'out'}"),
            "attribute.py": ("model=smollm2_135m", "task=arith", f"results=[{folder}]", f"out_dir={tmp_path / 'out'}"),
            }.get(program, (str(folder),))
    proc = run_entry("-m", program, *args) if program.startswith("mip.") else run_entry(program, *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "pass a store (results/store), a job folder" in lines[0] and str(folder) in lines[0]


def test_a_dry_run_folder_is_named_as_one_that_stored_nothing(tmp_path):
    env = {"MIP_RESULTS_DIR": str(tmp_path / "results")}
    dry = run_entry("run.py", "model=mock", "task=arith", "pattern=majority_first", "dry_run=true", "progress=false", env=env)
    assert dry.returncode == 0, dry.stderr[-2000:]
    [job] = (tmp_path / "results" / "runs").glob("*/*")
    proc = run_entry("analyze.py", f"results=[{job}]", f"out_dir={tmp_path / 'out'}")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "stored no records (dry runs" in proc.stderr
    summary = run_entry("-m", "mip.summary", str(job))
    assert summary.returncode == 0 and "Dry run: no model was called." in summary.stdout


# ---------------------------------------------------------------------------- item 3: one table per slice
def _blocks(text: str) -> dict[str, pd.Series]:
    """Valid-only accuracy per pattern, per slice heading, from a summary's tables."""
    blocks = {}
    for part in text.split("-- slice: ")[1:]:
        heading, *rows = part.splitlines()
        acc = {}
        for row in rows:
            cells = row.split()
            if cells and cells[0] in PATTERNS:
                acc[cells[0]] = float(cells[-2])
        blocks[heading] = pd.Series(acc)
    return blocks


def _model_slices(blocks: dict[str, pd.Series]) -> dict[str, pd.Series]:
    return {re.match(r"model=(\S+)", h).group(1): acc for h, acc in blocks.items()}


def test_the_sweep_summary_and_mip_summary_print_one_table_per_model(ran):
    closing = ran["sweep_out"].split("== sweep summary ==")[1]
    printed = run_entry("-m", "mip.summary", str(ran["sweep"])).stdout
    want = _accuracy(ran["results"] / "store", _keys(ran["sweep"]))
    for text in (closing, printed):
        blocks = _model_slices(_blocks(text))
        assert sorted(blocks) == ["simulated_first_k", "simulated_unbiased"]  # one pooled table before
        for model, acc in blocks.items():
            assert acc.to_dict() == want[model]
        # The planted rule (first 9 of 20 read; majority_last puts the 8 minority first) against none.
        assert blocks["simulated_first_k"]["majority_last"] == 0.0  # 50 %, pooled, before
        assert blocks["simulated_unbiased"]["majority_last"] == 100.0


def test_a_mock_sweep_over_prompt_variants_prints_one_table_per_variant(tmp_path):
    """The issue's mock sweep: hint and self_prompt were one table; each counts its own experiments
    (the mock's hint answers are valid, its self_prompt ones not: both kinds in one summary)."""
    env = {"MIP_RESULTS_DIR": str(tmp_path / "results")}
    proc = run_entry("run.py", "-m", "model=mock", "task=arith", "n=10", "p=0.6", "pattern=majority_first", "seed=0",
                     "budget=smoke", "prompt_variant=hint,self_prompt", "progress=false", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    closing = proc.stdout.split("== sweep summary ==")[1]
    headings = list(_blocks(closing))
    assert [re.search(r"prompt_variant=(\S+)", h).group(1) for h in headings] == ["hint", "self_prompt"]
    assert all("model=mock n=10 p=0.6 budget=smoke" in h and "pool=unfiltered" in h for h in headings)
    counts = [int(line.split()[-3]) for line in closing.splitlines() if line.startswith("majority_first")]
    assert counts == [2, 2]


# ---------------------------------------------------------------------------- item 4: never empty, headline
def test_analysis_off_the_core_takes_each_cell_and_prints_the_headline(ran, tmp_path, figures_unencoded):
    out = tmp_path / "report"
    proc = run_entry("analyze.py", f"results=[{ran['results'] / 'store'}]", f"out_dir={out}")
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.md").read_text()
    core = text.split("## Core setting")[1].split("\n## ")[0]
    assert "No records fit this section" not in core  # six sections empty before
    assert "each (n, p) cell the records hold is analysed as its own core cell: (10, 0.7), (20, 0.6)" in text
    for cell in ("n10_p0.7", "n20_p0.6"):  # each (n, p) its own core cell, never pooled
        assert (out / "tables" / f"table2_{cell}.csv").is_file()
    numbers = pd.read_csv(out / "tables" / "table2_numbers_n20_p0.6.csv").set_index("model")
    # The headline, on stdout: per slice, accuracy per pattern, Δ with its interval, π⁺, π⁻, sets.
    blocks = proc.stdout.split("== ")[1:]
    assert [b.splitlines()[0].split(" budget")[0] for b in blocks] == ["n=10 p=0.7", "n=20 p=0.6"]
    rows = {line.split()[0]: line for line in blocks[1].splitlines()[1:] if line.startswith("simulated")}
    header = blocks[1].splitlines()[1].split()
    short = [stats.SHORT[p] for p in PATTERNS]
    assert header[:7] == short and header[7:] == ["Δ", "(pp)", "Δ", "95", "%", "CI", "π⁺", "π⁻", "sets"]
    accuracy = _accuracy(ran["results"] / "store", _keys(ran["sweep"]))
    for model, row in rows.items():
        cells = row.split()
        assert [float(c) for c in cells[1:8]] == [accuracy[model][p] for p in PATTERNS]
        delta = numbers.loc[model]
        assert cells[8].rstrip("†‡") == f"{100 * delta['delta']:.1f}" and cells[-1] == str(delta["sets"])
        worst = stats.worse(delta["best_tied"].split(", "), delta["worst_tied"].split(", "))
        assert cells[-3:-1] == [stats.SHORT[delta["best"]] + ("*" if ", " in delta["best_tied"] else ""),
                                stats.SHORT[worst[0]] + ("*" if len(worst) > 1 else "") if worst else "–"]
    assert max(len(line) for line in proc.stdout.splitlines()) <= 120
    assert "not testable" in rows["simulated_first_k"]  # two instance sets: no interval


def test_a_job_folder_finds_its_store_when_run_from_elsewhere_or_moved(ran, tmp_path, monkeypatch):
    """A manifest's relative store path (``paths.results_dir=results``, the default) was relative
    to the folder the job ran in; a results folder moved as a whole keeps its stores beside its jobs."""
    import shutil

    from mip.analysis.folders import open_folder

    moved = tmp_path / "elsewhere" / "results"
    shutil.copytree(ran["results"], moved)
    for manifest in moved.rglob("job.json"):  # as written by a job run from tmp_path/elsewhere with a relative path
        job = json.loads(manifest.read_text())
        job["store_dir"] = "results/store"
        job["output_dir"] = str(manifest.parent.relative_to(moved.parent))
        manifest.write_text(json.dumps(job))
    monkeypatch.chdir(tmp_path)  # not the folder the jobs ran in
    [sweep] = (moved / "sweeps").glob("*/*")
    opened = open_folder(sweep)
    assert opened.stores == [moved / "store"] and {r.key for r in opened.records()} == _keys(ran["sweep"])
    gone = json.loads((sweep / "0" / "job.json").read_text())
    gone["store_dir"] = "/no/such/store"
    (sweep / "0" / "job.json").write_text(json.dumps(gone))
    from mip.analysis.folders import FolderError

    with pytest.raises(FolderError, match="names the store /no/such/store, which is not there"):
        open_folder(sweep / "0")
