"""analyze.py at scale: what a record costs (no composition per record, checked by count),
record pages written again only when their record changed, and a report swapped in whole.

Counts, never clocks: timings are benchmarks/analysis.py's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mip.analysis.analyze import analyze
from mip.analysis.report import figures
from mip.job import run_job
from mip.entry import config_store, shipped_tasks
from mip.entry.shipped_tasks import shipped
from mip.tools.prompt_source import Rebuilder, task_config

from .conftest import REPO, compose, unencoded, vary

N, P = 20, 0.6
PATTERNS = ("majority_first", "majority_last", "random")


def _store(results: Path, model: str = "simulated_first_k", seeds=(0,), patterns=PATTERNS) -> Path:
    base = compose(f"model={model}", "task=arith", f"n={N}", f"p={P}", "budget=smoke", "progress=false",
                   f"paths.results_dir={results}")
    for pattern in patterns:
        for seed in seeds:
            assert run_job(vary(base, pattern=pattern, seed=seed), results / "jobs" / f"{model}-{pattern}-{seed}").ok
    return results / "store"


def _analyze(store: Path, out: Path, *extra: str, in_hydra: bool = False, save=unencoded) -> Path:
    """analyze.py's work; ``in_hydra``: inside Hydra's app, as analyze.py's @hydra.main runs it;
    ``save`` in place of figures.save (default: no encoding)."""
    from hydra import initialize_config_dir

    cfg = compose(f"results=[{store}]", f"out_dir={out}", f"core=[{N},{P}]",
                  f"coverage.model_dir={REPO / 'conf' / 'model'}", *extra, config_name="analyze")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save", save)
        if not in_hydra:
            return analyze(cfg, prompts=Rebuilder.maker(cfg.paths.cache_dir, shipped(REPO / "conf"))).parent
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            return analyze(cfg, prompts=Rebuilder.maker(cfg.paths.cache_dir, shipped(REPO / "conf"))).parent


@pytest.fixture
def counted(monkeypatch):
    """Every Hydra composition made while analysing, counted."""
    calls: list[tuple] = []
    compose_conf = config_store.compose_conf

    def counting(*args, **kwargs):
        calls.append(args)
        return compose_conf(*args, **kwargs)

    monkeypatch.setattr(config_store, "compose_conf", counting)
    shipped_tasks.conf_tasks.cache_clear()  # the per-process memory of composed task files
    yield calls
    shipped_tasks.conf_tasks.cache_clear()


def test_a_store_is_analysed_with_no_composition_per_record(tmp_path, counted):
    """From a store (no job's own task config), inside Hydra's app as analyze.py runs: the task's
    config is composed once, not once a record, and every record's prompt is still rebuilt."""
    store = _store(tmp_path / "results", seeds=(0, 1))
    report = _analyze(store, tmp_path / "out", f"paths.results_dir={tmp_path / 'results'}", in_hydra=True)
    pages = list((report / "records").rglob("*.html"))
    assert len(pages) == 20, len(pages)  # majority_first, majority_last: 2 each; random: 6; two seeds
    assert len(counted) == 1, counted  # task=arith, once for 36 records
    for page in pages:
        assert "rebuilt from the record and its pool; hash checked" in page.read_text(encoding="utf-8"), page


def test_the_papers_five_task_configs_are_one_composition(counted):
    """A store of the paper's tasks (no job's own task config) has their configs from one composition
    of ``task=all``, each as ``task=<name>`` composes it (a mixed store composed six task files, 4.4 s
    of CPU under load, of its 37); a task outside ``all`` still composes its own file."""
    from mip.config import TaskConfig
    from omegaconf import OmegaConf

    got = {name: task_config(name, {}, shipped(REPO / "conf")) for name in ("math", "ner", "wsd", "sentiment")}
    assert counted == [(str(REPO / "conf"), "task=all")], counted
    for name, task in got.items():
        alone = config_store.compose_conf(REPO / "conf", f"task={name}").task[name]
        assert task == OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TaskConfig), alone)), name
    counted.clear()
    assert task_config("arith", {}, shipped(REPO / "conf")).name == "arith"
    assert counted == [(str(REPO / "conf"), "task=arith")], counted


def test_a_rerun_writes_only_the_pages_of_new_records(tmp_path, monkeypatch):
    """A second analysis of the same store writes no record page again; after one more job, only
    that job's."""
    from mip.analysis.report import record_pages

    results = tmp_path / "results"
    store = _store(results, patterns=("majority_first", "majority_last"))
    out = tmp_path / "out"
    built: list[str] = []
    view_of = record_pages.view_of
    monkeypatch.setattr(record_pages, "view_of", lambda record, *a: built.append(record.key) or view_of(record, *a))
    report = _analyze(store, out, f"paths.results_dir={results}")
    first = {p.name: p.stat().st_mtime_ns for p in (report / "records").rglob("*.html")}
    assert len(built) == len(first) == 4
    built.clear()
    _analyze(store, out, f"paths.results_dir={results}")
    assert built == [] and {p.name: p.stat().st_mtime_ns for p in (report / "records").rglob("*.html")} == first
    _store(results, patterns=("majority_edges",))
    _analyze(store, out, f"paths.results_dir={results}")
    assert len(built) == 2 and {f"{k}.html" for k in built}.isdisjoint(first)
    listed = {k for page in (report / "lists").glob("*.html")
              for k in re.findall(r'href="\.\./records/\w\w/(\w+)\.html"', page.read_text(encoding="utf-8"))}
    assert len(listed) == 6 and all((report / "records" / k[:2] / f"{k}.html").is_file() for k in listed)


def _whole(report: Path) -> str:
    """report.md, after checking that every link of report.html and of its lists leads to a file."""
    for page in [report / "report.html", *(report / "lists").glob("*.html")]:
        for href in re.findall(r'href="([^"#]+)', page.read_text(encoding="utf-8")):
            if not href.startswith(("javascript:", "http", "figures/")):  # figures: not encoded here
                assert (page.parent / href).exists(), (page, href)
    return (report / "report.md").read_text(encoding="utf-8")


def test_a_report_interrupted_at_any_moment_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    """An analysis stopped at its 1st, 10th, … file written (Ctrl-C) leaves the last report as it was,
    every link whole; a folder a kill left beside is removed by the next analysis, which swaps its report in."""
    results = tmp_path / "results"
    store = _store(results, patterns=("majority_first", "majority_last"))
    out = tmp_path / "out"
    before = _whole(_analyze(store, out, f"paths.results_dir={results}"))
    _store(results, patterns=("majority_edges",))
    write_text, calls = Path.write_text, []

    def stopping_at(k: int):
        def write(self, *a, **kw):
            calls.append(self)
            if len(calls) == k:
                raise KeyboardInterrupt
            return write_text(self, *a, **kw)
        return write

    for k in (1, 3, 10, 20):
        calls.clear()
        monkeypatch.setattr(Path, "write_text", stopping_at(k))
        with pytest.raises(KeyboardInterrupt):
            _analyze(store, out, f"paths.results_dir={results}")
        monkeypatch.setattr(Path, "write_text", write_text)
        assert _whole(out) == before, k
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    (tmp_path / ".out.writing-1").mkdir()  # what a kill -9 leaves beside
    after = _whole(_analyze(store, out, f"paths.results_dir={results}"))
    assert after != before and "8 experiments" not in after and (tmp_path / ".out.writing-1").exists() is False


def _stamping(run: list[int]):
    """figures.save less the encoding: each file says which run wrote it (``run[0]``), so that the figures a
    run encoded are counted from the files, whichever worker process encoded them."""
    def save(fig, folder: Path, name: str) -> list[Path]:
        paths = unencoded(fig, folder, name)
        folder.mkdir(parents=True, exist_ok=True)
        for path in paths:
            path.write_bytes(f"run {run[0]}".encode())
        return paths
    return save


def _encoded(report: Path, run: int) -> list[str]:
    """The figures of ``report`` that ``run`` encoded (their PNG and PDF both), by name."""
    files = sorted((report / "figures").glob("*.p*"))
    names = sorted({p.stem for p in files if p.read_bytes() == f"run {run}".encode()})
    assert all((report / "figures" / f"{n}.{e}").read_bytes() == f"run {run}".encode() for n in names for e in ("png", "pdf"))
    return names


def test_a_rerun_of_an_unchanged_store_encodes_no_figure(tmp_path, monkeypatch):
    """A second analysis of the same store keeps every figure of the last report (none encoded again);
    a new FIGURE_RULES draws every figure again: none is ever kept stale."""
    results, out, run = tmp_path / "results", tmp_path / "out", [1]
    store = _store(results, patterns=("majority_first", "majority_last"))
    report = _analyze(store, out, f"paths.results_dir={results}", save=_stamping(run))
    drawn = _encoded(report, 1)
    shown = sorted(p.name for p in (report / "figures").glob("*.p*"))
    assert len(drawn) > 5 and shown == sorted(f"{n}.{e}" for n in drawn for e in ("pdf", "png"))
    run[0] = 2
    _analyze(store, out, f"paths.results_dir={results}", save=_stamping(run))
    assert _encoded(report, 2) == [] and _encoded(report, 1) == drawn
    assert sorted(p.name for p in (report / "figures").glob("*.p*")) == shown
    assert f"figures/{drawn[0]}.png" in (report / "report.md").read_text(encoding="utf-8")
    from mip.analysis.report import kept_figures

    monkeypatch.setattr(kept_figures, "FIGURE_RULES", kept_figures.FIGURE_RULES + 1)
    run[0] = 3
    _analyze(store, out, f"paths.results_dir={results}", save=_stamping(run))
    assert _encoded(report, 3) == drawn


def _job(results: Path, n: int, pattern: str, seed: int = 0) -> None:
    base = compose("model=simulated_first_k", "task=arith", f"n={n}", f"p={P}", "budget=smoke", "progress=false",
                   f"paths.results_dir={results}")
    assert run_job(vary(base, pattern=pattern, seed=seed), results / "jobs" / f"n{n}-{pattern}-{seed}").ok


def test_one_more_job_encodes_again_only_the_figures_its_records_reach(tmp_path):
    """One more job at another (n, p) cell draws again the figures that pool that cell (Figs. 10, 11, 23)
    and draws its pattern's Fig. 3; the core's figures and the other pattern's Fig. 3 are kept, the last
    report's own files (links, never written over: a kill leaves that report whole)."""
    results, out, run = tmp_path / "results", tmp_path / "out", [1]
    store = _store(results, patterns=("majority_first", "majority_last"))
    _job(results, 10, "majority_first")
    report = _analyze(store, out, f"paths.results_dir={results}", save=_stamping(run))
    first = _encoded(report, 1)
    assert {"fig2_representative_patterns_n20_p0.6", "fig3_np_simulated_first_k_majority_first_smoke_unfiltered",
            "fig10_np_accuracy_simulated_first_k_smoke_unfiltered"} <= set(first), first
    _job(results, 10, "majority_last")
    run[0] = 2
    _analyze(store, out, f"paths.results_dir={results}", save=_stamping(run))
    again = _encoded(report, 2)
    assert again == ["fig10_np_accuracy_simulated_first_k_smoke_unfiltered",
                     "fig11_np_invalid_simulated_first_k_smoke_unfiltered",
                     "fig23_coverage_simulated_first_k_smoke_unfiltered",
                     "fig3_np_simulated_first_k_majority_last_smoke_unfiltered"]
    assert _encoded(report, 1) == sorted(set(first) - set(again))  # the rest: kept, as the first run wrote them


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_figure_workers_end_with_a_killed_report_process():
    """A kill of analyze.py (no clean-up of any kind) ends the workers drawing its figures: none is
    left waiting for figures that never come."""
    import subprocess
    import sys
    import time

    code = ("import os, sys, time\n"
            "from pathlib import Path\n"
            "from mip.analysis.report import drawing, figures\n"
            "d = drawing.Drawing(workers=2)\n"
            "for i in range(2):\n"
            "    d.add(figures.Later(time.sleep, (60,), {}), Path('.'), f'f{i}')\n"
            "while len(d.pool._processes) < 2: time.sleep(0.05)\n"
            "print(*d.pool._processes, flush=True)\n"
            "time.sleep(0.5)\n"
            "os._exit(9)\n")
    ran = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    workers = [int(p) for p in ran.stdout.split()]
    assert ran.returncode == 9 and len(workers) == 2, ran.stderr
    deadline = time.monotonic() + 30  # a wait for the kernel's signal, not a timing
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, workers))
