"""analyze.py at the paper's scale: a planted store of the study's shape, analysed and timed.

    python benchmarks/analysis.py [--data-dir ../shared/data/raw] [--root /tmp/mip-analysis] [--shuffles 20]

The store: every planted model (``conf/model/simulated_*.yaml``) on the five tasks (``task=all``),
per model the core grid (every pattern, selection seeds 0-2, the random pattern's three order
seeds), both budgets (20k, 100k), the three other prompt variants, the (n, p) grid (seed 1) and
the expanded orderings (six structured patterns, seeds 0-2, ``--shuffles`` shuffle seeds): about
6,700 records a model at 21 shuffles, 20,000 and more in all. The n of the core and the grid is
a twentieth of the paper's (core n = 100; grid n = 20, 40, 60, 80, 100), so that the store is
written in minutes; ``--paper-n`` gives the paper's n (the same records, each longer).

How it is written: one real ``run.py`` single run and one real ``run.py -m`` sweep, and the rest
through :func:`mip.job.run_job` in this process (each condition composed once, then varied by
pattern and seed as a sweep's jobs are): the same job runner and store writes as run.py, without
a process and a composition a job. No W&B (``logger=none``).

What is timed, each in a fresh process (``analyze.py <store> out_dir=…``), with the machine's
load beside: wall and CPU seconds per 1,000 records for the tables, figures and report.md
(everything before report.html) and for report.html (its lists and record pages) separately,
the figures encoded (not kept from the last report), the process's peak memory, report.html's
size per record (the ``records/`` and ``lists/`` folders and report.html, beyond each record's
own output and trace text), and the same after one more single-run job (the rerun). Goals
on 2 cores: ≤ 180 s for the store with report.html, ≤ 25 KB a record, ≤ 20 s for the rerun, ≤ 4 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's mip, as run.py and analyze.py import it
MODELS = ("simulated_first_k", "simulated_last_k", "simulated_unbiased")
PATTERNS = ("random", "majority_first", "majority_last", "majority_edges", "majority_middle", "soft_majority_edges",
            "soft_majority_middle")
GRID_N, GRID_P = (100, 200, 500, 1000, 2000), (0.9, 0.7, 0.6, 0.55)
CORE_N, CORE_P = 2000, 0.55
#: The grid's n at a twentieth of the paper's, each a multiple of 20 (n·p whole at every p).
SMALL_N = {100: 20, 200: 40, 500: 60, 1000: 80, 2000: 100}


def conditions(paper_n: bool, shuffles: int) -> list[tuple[list[str], list[str], list[int]]]:
    """(overrides, patterns, seeds) of each condition of one model: the study's grid."""
    n = (lambda x: x) if paper_n else SMALL_N.__getitem__
    core = [f"n={n(CORE_N)}", f"p={CORE_P}"]
    out = [([*core, "budget=20k", "prompt_variant=standard"], list(PATTERNS), [0, 1, 2]),
           ([*core, "budget=100k", "prompt_variant=standard"], list(PATTERNS), [0, 1, 2])]
    out += [([*core, "budget=20k", f"prompt_variant={v}"], list(PATTERNS), [0, 1, 2])
            for v in ("hint", "strategy", "self_prompt")]
    out += [([f"n={n(x)}", f"p={p}", "budget=20k", "prompt_variant=standard", "setting=generalisability"],
             list(PATTERNS), [1]) for x in GRID_N for p in GRID_P if (n(x), p) != (n(CORE_N), CORE_P)]
    out += [([*core, "budget=20k", f"shuffle_seeds=[{','.join(map(str, range(1, shuffles + 1)))}]"],
             list(PATTERNS[1:]), [0, 1, 2])]
    return out


def build(root: Path, data_dir: str, paper_n: bool, shuffles: int) -> int:
    """Write the planted store under ``root`` (``root/store``; job folders under ``root/jobs``)."""
    import copy
    import dataclasses

    from omegaconf import OmegaConf

    from mip.job import run_job
    from mip.entry.config_store import compose_conf

    env = {**os.environ, "MIP_RESULTS_DIR": str(root), "HF_HUB_OFFLINE": "1"}
    common = ["task=all", "progress=false", "logger=none", f"data_dir={data_dir}", f"paths.results_dir={root}"]
    core = [f"n={CORE_N if paper_n else SMALL_N[CORE_N]}", f"p={CORE_P}", "budget=20k"]
    # A single run and a sweep, as a researcher starts them.
    for args in (["model=simulated_first_k", "pattern=majority_first", "seed=0"],
                 ["-m", "model=simulated_last_k", "pattern=majority_first,majority_last", "seed=0"]):
        ran = subprocess.run([sys.executable, "run.py", *args, *core, *common], cwd=REPO, env=env, capture_output=True,
                             text=True)
        if ran.returncode:
            sys.exit(f"run.py {' '.join(args)} failed: {ran.stderr[-2000:]}")
    jobs = 0
    for model in MODELS:
        for overrides, patterns, seeds in conditions(paper_n, shuffles):
            label = [o.split("=")[1] for o in overrides if o.startswith("setting=")]  # a preset's label, as its own
            args = [o for o in overrides if not o.startswith("setting=")]
            cfg = OmegaConf.to_object(compose_conf(REPO / "conf", f"model={model}", *args, *common))
            if label:
                cfg = dataclasses.replace(cfg, setting=label[0])
            for pattern in patterns:
                for seed in seeds:
                    job = copy.deepcopy(dataclasses.replace(cfg, seed=seed,
                                                            pattern=dataclasses.replace(cfg.pattern, name=pattern)))
                    summary = run_job(job, root / "jobs" / f"{jobs:05d}")
                    if not summary.ok:
                        sys.exit(f"job {jobs} ({model} {' '.join(overrides)} {pattern} {seed}) failed: "
                                 f"{summary.errors}")
                    jobs += 1
        print(f"  {model}: {jobs} jobs so far", flush=True)
    return jobs


def records(store: Path) -> int:
    from mip.analysis import folders

    return sum(1 for _ in folders.records([store]))


def analyse(store: Path, out: Path) -> dict:
    """analyze.py over ``store`` in a fresh process; report.html's part timed inside it."""
    timing = out.parent / f"{out.name}.timing.json"
    driver = (f"import json, resource, runpy, sys, time\n"
              f"from mip.analysis.report import html\n"
              f"spent = {{'wall': 0.0, 'cpu': 0.0}}\n"
              f"write = html.write\n"
              f"def timed(*a, **k):\n"
              f"    w, c = time.monotonic(), time.process_time()\n"
              f"    try:\n        return write(*a, **k)\n"
              f"    finally:\n"
              f"        spent['wall'] += time.monotonic() - w; spent['cpu'] += time.process_time() - c\n"
              f"        json.dump(spent, open({str(timing)!r}, 'w'))\n"
              f"html.write = timed\n"
              f"sys.argv = ['analyze.py', {str(store)!r}, 'out_dir={out}']\n"
              f"runpy.run_path('analyze.py', run_name='__main__')\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    start, started = time.monotonic(), time.time()
    ran = subprocess.run([sys.executable, "-c", driver], cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                         capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if ran.returncode:
        sys.exit(f"analyze.py failed ({ran.returncode}): {ran.stderr[-3000:]}")
    html = json.loads(timing.read_text())
    pngs = list((out / "figures").glob("*.png"))  # a kept figure is the last report's file, of its time
    encoded = sum(1 for png in pngs if png.stat().st_mtime >= started)
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "html_wall": html["wall"], "html_cpu": html["cpu"], "peak_mb": after.ru_maxrss / 1024, "load": load,
            "figures": f"{encoded} of {len(pngs)}"}


def page_bytes(out: Path, store: Path) -> tuple[int, int]:
    """report.html's bytes (report.html, lists/, records/) and the records' own output and trace text."""
    from mip.analysis import folders

    pages = sum(p.stat().st_size for d in ("lists", "records") for p in (out / d).rglob("*") if p.is_file())
    pages += (out / "report.html").stat().st_size
    own = sum(len((s.output or "").encode()) + len((s.reasoning or "").encode())
              for r in folders.records([store]) for a in r.attempts for s in a.stages)
    return pages, own


def row(name: str, n: int, t: dict) -> None:
    k = n / 1000
    print(f"| {name} | {n} | {t['wall']:.1f} | {t['cpu']:.1f} | {(t['wall'] - t['html_wall']) / k:.2f} / "
          f"{(t['cpu'] - t['html_cpu']) / k:.2f} | {t['html_wall'] / k:.2f} / {t['html_cpu'] / k:.2f} | "
          f"{t['figures']} | {t['peak_mb']:.0f} | {t['load']:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "raw"))
    parser.add_argument("--root", default="/tmp/mip-analysis-bench", help="where the store is built (kept)")
    parser.add_argument("--paper-n", action="store_true", help="the paper's n (100-2,000), not a twentieth")
    parser.add_argument("--shuffles", type=int, default=21)
    args = parser.parse_args()
    root = Path(args.root)
    store = root / "store"
    if not store.is_dir():
        start = time.monotonic()
        jobs = build(root, args.data_dir, args.paper_n, args.shuffles)
        print(f"built {jobs} jobs in {time.monotonic() - start:.0f} s", flush=True)
    count = records(store)
    print(f"{count} records in {store}", flush=True)
    out = root / "report"
    print("| run | records | wall s | CPU s | tables+figures wall / CPU s per 1k | report.html wall / CPU s per 1k "
          "| figures encoded | peak MB | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    row("whole store", count, analyse(store, out))
    pages, own = page_bytes(out, store)
    print(f"report.html: {pages / 1e6:.1f} MB over {count} records = {pages / count / 1024:.1f} KB a record; "
          f"beyond their own output and trace text ({own / 1e6:.1f} MB): "
          f"{(pages - own) / count / 1024:.1f} KB a record")
    env = {**os.environ, "MIP_RESULTS_DIR": str(root), "HF_HUB_OFFLINE": "1"}
    one = ["model=simulated_unbiased", "task=all", "pattern=majority_last", "seed=7", "n=20", "p=0.6", "budget=20k",
           "progress=false", "logger=none", f"data_dir={args.data_dir}", f"paths.results_dir={root}"]
    subprocess.run([sys.executable, "run.py", *one], cwd=REPO, env=env, capture_output=True, check=True)
    row("after one more job", records(store), analyse(store, out))


if __name__ == "__main__":
    main()
