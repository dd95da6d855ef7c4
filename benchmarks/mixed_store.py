"""analyze.py over a mixed store: three planted models, the embedded SmolLM2 and an API model, 1,412 records.

    python benchmarks/mixed_store.py [--data-dir ../shared/data/raw] [--root /tmp/mip-mixed-store]

The store a researcher has after a first week: one ``run.py -m`` sweep (a planted model's core grid,
``task=all``, 270 records), one ``run.py`` single run (SmolLM2, the embedded model, run in-process by
transformers: 2 records, a few minutes of CPU), and through :func:`mip.job.run_job` in this process
(each condition composed once, then varied by pattern and seed as a sweep's jobs are): the two other
planted models' core grids, one of them at the 100k budget too, an (n, p) cell of the first (1,170
planted records in all), and an API model (``model=smollm2_135m_server`` renamed ``api_model``, 240
records) against a local OpenAI-compatible server that answers as providers do, reasoning in
``reasoning``, 20,000-character traces (``tests/fake_server.py``), at four (n, p) cells and two
prompt variants. No W&B (``logger=none``).

What is timed, each in a fresh process (``analyze.py <store> out_dir=…``, as benchmarks/analysis.py
does): wall and CPU seconds, the tables and figures and report.html apart, peak memory; then the same
into the same out_dir again, nothing changed (the rerun). Beside: report.html's size per record beyond
the records' own output and trace text, and the search's index (``search/``) per record.
Goal: the first analysis in under 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's mip and its tests' local server

from benchmarks import analysis  # noqa: E402
from benchmarks.analysis import analyse, page_bytes, records, row  # noqa: E402

ALL = ("random", "majority_first", "majority_last", "majority_edges", "majority_middle", "soft_majority_edges",
       "soft_majority_middle")
CORE = ["n=20", "p=0.6", "budget=20k", "task=all"]
SMALL = ["task=arith", "n=10", "p=0.6", "budget=smoke"]
#: (model and its settings, patterns, selection seeds) of the jobs run in this process.
PLANTED = [(["model=simulated_last_k", *CORE], ALL, [0, 1, 2]),
           (["model=simulated_unbiased", *CORE], ALL, [0, 1, 2]),
           (["model=simulated_unbiased", "n=20", "p=0.6", "budget=100k", "task=all"], ALL, [0, 1, 2]),
           (["model=simulated_first_k", "n=40", "p=0.7", "budget=20k", "task=all"], ALL, [0])]
API = [*[([f"n={n}", "p=0.6", "budget=20k", "task=arith", f"prompt_variant={v}"], ALL, [0, 1, 2])
         for n, v in ((10, "standard"), (20, "standard"), (40, "standard"), (20, "hint"))],
       (["n=20", "p=0.7", "budget=20k", "task=arith"], ALL[1:5], [0, 1, 2])]


def build(root: Path, data_dir: str) -> int:
    """Write the mixed store under ``root`` (``root/store``; job folders under ``root/jobs``); return its jobs."""
    from mip.entry.config_store import compose_conf
    from tests.fake_server import FakeServer

    env = {**os.environ, "MIP_RESULTS_DIR": str(root), "HF_HUB_OFFLINE": "1"}
    common = ["progress=false", "logger=none", f"data_dir={data_dir}", f"paths.results_dir={root}"]
    for args in (["-m", "model=simulated_first_k", "pattern=glob(*)", "seed=0,1,2", *CORE],
                 ["model=smollm2_135m", *SMALL, "pattern=majority_first", "seed=0"]):
        ran = subprocess.run([sys.executable, "run.py", *args, *common], cwd=REPO, env=env, capture_output=True,
                             text=True)
        if ran.returncode:
            sys.exit(f"run.py {' '.join(args)} failed: {ran.stderr[-2000:]}")
    jobs = 22  # the sweep's 21 and the single run
    with FakeServer(reasoning_shape="reasoning", trace_chars=20_000) as server:
        api = ["model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
               "model.tokenizer=null", "model.context_window=100000", "model.name=api_model"]
        for overrides, patterns, seeds in [*PLANTED, *[([*api, *o], p, s) for o, p, s in API]]:
            jobs += _jobs(root, compose_conf(REPO / "conf", *overrides, *common), patterns, seeds, jobs)
            print(f"  {jobs} jobs so far", flush=True)
    return jobs


def _jobs(root: Path, composed, patterns, seeds, first: int) -> int:
    """One job per pattern and seed of a composed condition, as a sweep's jobs vary it."""
    import copy
    import dataclasses

    from omegaconf import OmegaConf

    from mip.job import run_job

    cfg, done = OmegaConf.to_object(composed), 0
    for pattern in patterns:
        for seed in seeds:
            varied = dataclasses.replace(cfg, seed=seed, pattern=dataclasses.replace(cfg.pattern, name=pattern))
            job = copy.deepcopy(varied)
            summary = run_job(job, root / "jobs" / f"{first + done:05d}")
            if not summary.ok:
                sys.exit(f"job {first + done} ({cfg.model.name} {pattern} {seed}) failed: {summary.errors}")
            done += 1
    return done


def _commit(repo: Path) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True)
    return head.stdout.strip()


def search_bytes(out: Path) -> tuple[int, int]:
    """The search index's bytes, and those of the trace and output text its rows hold."""
    import json

    total = text = 0
    for shard in (out / "search").glob("*.js"):
        total += shard.stat().st_size
        if shard.name != "shards.js":
            body = shard.read_text(encoding="utf-8")
            text += sum(len(r[12].encode()) + len(r[13].encode()) for r in json.loads(body[14:-3]))
    return total, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "raw"))
    parser.add_argument("--root", default="/tmp/mip-mixed-store", help="where the store is built (kept)")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the checkout whose analyze.py is timed (a `git worktree` of a baseline commit)")
    args = parser.parse_args()
    root = Path(args.root)
    analysis.REPO = args.repo.resolve()  # analyse() runs analyze.py in this checkout, importing its mip
    store = root / "store"
    if not store.is_dir():
        start = time.monotonic()
        jobs = build(root, args.data_dir)
        print(f"built {jobs} jobs in {time.monotonic() - start:.0f} s", flush=True)
    count = records(store)
    print(f"{count} records in {store}", flush=True)
    out = root / ("report" if analysis.REPO == REPO else f"report-{analysis.REPO.name}")
    shutil.rmtree(out, ignore_errors=True)  # the first analysis is a first
    print(f"analyze.py of {analysis.REPO} at {_commit(analysis.REPO)}, load average {os.getloadavg()[0]:.1f}")
    print("| run | records | wall s | CPU s | tables+figures wall / CPU s per 1k | report.html wall / CPU s per 1k "
          "| figures encoded | peak MB | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    row("mixed store, first analysis", count, analyse(store, out))
    row("again, nothing changed", count, analyse(store, out))
    pages, own = page_bytes(out, store)
    index, copied = search_bytes(out) if (out / "search").is_dir() else (0, 0)
    print(f"report.html: {pages / 1e6:.1f} MB over {count} records = {pages / count / 1024:.1f} KB a record; "
          f"beyond their own output and trace text ({own / 1e6:.1f} MB): {(pages - own) / count / 1024:.1f} KB a "
          f"record; the search's index: {index / count / 1024:.2f} KB a record, "
          f"{(index - copied) / count / 1024:.2f} KB beyond the trace and output text it holds")


if __name__ == "__main__":
    main()
