"""Request throughput and resume cost of mip's job loop against a local server.

    python benchmarks/throughput.py [--concurrency 1 16 64 256] [--experiments 2000] [--latency 0.2]

The server (benchmarks/bench_server.py, pinned to the second core) answers after a fixed
latency L with a ~22 KB reply; each request carries a ~200 KB prompt (2,000 instances of
~100 characters). mip runs on the first core: a whole job — pools, planning, prompts,
requests, parsing, scoring and one atomic record file per experiment. Reported per
concurrency c: experiments/s against the ideal c/L, and mip's CPU time per experiment.
Then the same job again: requests made (must be 0) and its time.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count") as r:
        return json.loads(r.read())["n"]


def config(folder: Path, port: int, concurrency: int, experiments: int):
    from mip.audit import AuditConfig, task_config
    from mip.config import Config, ModelConfig, BudgetConfig, PatternConfig, PromptVariantConfig, PathsConfig

    table = folder / "bench.csv"
    if not table.exists():
        words = ["a quietly moving film", "dull and lifeless", "beautifully acted", "an utter mess", "warm and funny"]
        pd.DataFrame({"text": [" ".join(words[(i + k) % 5] for k in range(5))[:100] + f" #{i}" for i in range(6000)],
                      "label": ["positive" if i % 2 else "negative" for i in range(6000)]}).to_csv(table, index=False)
    task = task_config(AuditConfig(data=str(table), labels=["negative", "positive"],
                                   question="Determine the majority sentiment label among all provided instances."),
                       "bench", 3000)
    model = ModelConfig(name="bench", backend="openai_compat", model_id="bench-model", context_window=1_000_000,
                        base_url=f"http://127.0.0.1:{port}/v1", max_concurrency=concurrency, deterministic=False,
                        request_timeout_s=60)
    return Config(model=model, task={"bench": task}, pattern=PatternConfig("random"), budget=BudgetConfig("20k", 20000),
                  prompt_variant=PromptVariantConfig("standard"), n=2000, p=0.55, order_seeds=list(range(experiments // 2)),
                  paths=PathsConfig(results_dir=str(folder), store_dir=str(folder / f"store-c{concurrency}"),
                                    cache_dir=str(folder / "cache")), progress=False, setting="bench")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--experiments", type=int, default=2000)
    parser.add_argument("--experiments-at-c1", type=int, default=100, help="c = 1 takes N·L seconds; fewer there")
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    from mip.data import build_pool
    from mip.runner import run_job

    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "bench_server.py"), str(port), str(args.latency)])
    try:
        for _ in range(100):
            try:
                served(port)
                break
            except OSError:
                time.sleep(0.1)
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for c in args.concurrency:
                n = args.experiments_at_c1 if c == 1 else args.experiments
                cfg = config(folder, port, c, n)
                build_pool(cfg.task["bench"], None, cfg.paths.cache_dir)  # pool outside the timing
                before = served(port)
                before_times, wall = os.times(), time.perf_counter()
                summary = run_job(cfg, folder / f"job-c{c}")
                wall, after_times = time.perf_counter() - wall, os.times()
                user, system = after_times.user - before_times.user, after_times.system - before_times.system
                cpu = user + system
                assert summary.ok and summary.stored_now == n, summary.errors[:3]
                rate = n / wall
                ideal = c / args.latency
                before_rerun = served(port)
                rerun = time.perf_counter()
                again = run_job(cfg, folder / f"rerun-c{c}")
                rerun = time.perf_counter() - rerun
                rows.append({"c": c, "experiments": n, "seconds": round(wall, 1), "exp/s": round(rate, 1),
                             "ideal c/L": ideal, "ratio": round(rate / ideal, 3), "CPU ms/exp": round(1000 * cpu / n, 2),
                             "of it kernel": round(1000 * system / n, 2),
                             "requests": served(port) - before, "rerun requests": served(port) - before_rerun,
                             "rerun s": round(rerun, 2), "rerun stored now": again.stored_now})
                print(rows[-1], flush=True)
        print()
        print(pd.DataFrame(rows).to_markdown(index=False))
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
