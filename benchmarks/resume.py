"""Resume cost: rerun a finished core grid of 15 models (4,050 experiments) — it must make
zero requests, and it should take seconds.

    python benchmarks/resume.py [--data-dir ../shared/data/raw] [--models 15]

The first pass stores the grid with the scripted mock backend under 15 model names (21 jobs
each: 7 patterns × seeds 0–2, the five tasks, n = 2,000, p = 0.55); the second pass runs the
same 315 jobs again and is timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from mip.config import PatternConfig
from mip.experiment.instances import PATTERNS
from mip.job import run_job


def grid(base, models: int):
    for m in range(models):
        for pattern in PATTERNS:
            for seed in (0, 1, 2):
                yield replace(base, model=replace(base.model, name=f"model{m:02d}"), pattern=PatternConfig(pattern), seed=seed)


def main() -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mip.entry.config_store import register

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"))
    parser.add_argument("--models", type=int, default=15)
    args = parser.parse_args()
    register()
    with tempfile.TemporaryDirectory() as tmp:
        with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[1] / "conf"), version_base="1.3"):
            base = OmegaConf.to_object(compose("config", overrides=[
                "model=mock", "task=all", "setting=core",  # the core grid: a scripted model runs a small job by default
                f"data_dir={args.data_dir}", f"paths.results_dir={tmp}", f"paths.cache_dir={tmp}/cache",
                "progress=false"]))
        start = time.perf_counter()
        first = [run_job(cfg, Path(tmp) / "jobs" / f"{i}") for i, cfg in enumerate(grid(base, args.models))]
        stored = time.perf_counter() - start
        start = time.perf_counter()
        again = [run_job(cfg, Path(tmp) / "rerun" / f"{i}") for i, cfg in enumerate(grid(base, args.models))]
        rerun = time.perf_counter() - start
    experiments = sum(s.experiments for s in first)
    print(f"grid: {len(first)} jobs, {experiments:,} experiments; first pass {stored:,.1f} s "
          f"({sum(s.calls for s in first):,} calls)")
    print(f"rerun: {sum(s.calls for s in again)} calls, {sum(s.stored_now for s in again)} stored, "
          f"{rerun:,.1f} s ({1000 * rerun / len(again):,.0f} ms per job)")


if __name__ == "__main__":
    main()
