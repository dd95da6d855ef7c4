"""A planted sweep's launch overhead: the documented 42-job sweep of two planted models (540
experiments), timed from the command line as a researcher runs it.

    python benchmarks/launch.py [--data-dir ../shared/data/raw] [--repeat 2]

Launch overhead a job = (the sweep's wall time − the jobs' own time, ``elapsed_s`` of each
``job.json``) / jobs: Hydra's composition and bookkeeping of each job, the callbacks' checks,
and the interpreter's start, imports and summary shared out. Beside it the marginal overhead,
what each further job adds: the same sum for a 2-job sweep of the same command (one model,
one pattern) taken off, over the 40 jobs between. Both as a ratio to the issue's limit of
0.3 s a job (≤ 1 meets it), beside the sweep's wall and CPU time (limit 25 s wall). The pool
cache (``MIP_CACHE_DIR`` or ``~/.cache/mip``) is warmed by a first, untimed run. The machine's
load is printed with each run: on a shared machine, compare runs of similar load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT_S = 0.3
SWEEP_LIMIT_S = 25.0
COMMAND = ["run.py", "-m", "model=simulated_first_k,simulated_unbiased", "task=all", "n=20", "p=0.6",
           "pattern=glob(*)", "seed=0,1,2", "budget=smoke", "progress=false"]
SMALL = [a for a in COMMAND if not a.startswith(("model=", "pattern=", "seed="))] + [
    "model=simulated_first_k", "pattern=majority_first", "seed=0,1"]


def one_sweep(data_dir: str, command: list[str] = COMMAND) -> dict:
    """Run the sweep into a fresh results folder; its wall and CPU time and the jobs' own time."""
    with tempfile.TemporaryDirectory() as results:
        env = {**os.environ, "MIP_RESULTS_DIR": results, "HF_HUB_OFFLINE": "1"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        ran = subprocess.run([sys.executable, *command, f"data_dir={data_dir}"], cwd=REPO, env=env,
                             capture_output=True, text=True)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if ran.returncode != 0:
            sys.exit(f"the sweep failed ({ran.returncode}): {ran.stderr[-2000:]}")
        manifests = [json.loads(p.read_text()) for p in Path(results).rglob("job.json")]
    jobs = len(manifests)
    own = sum(m.get("elapsed_s") or 0.0 for m in manifests)
    return {"jobs": jobs, "experiments": sum(m["experiments"] for m in manifests), "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), "jobs_own_s": own,
            "overhead_per_job_s": (wall - own) / jobs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data" / "raw"))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    one_sweep(args.data_dir)  # the pool cache warmed
    for i in range(args.repeat):
        small, r = one_sweep(args.data_dir, SMALL), one_sweep(args.data_dir)
        fixed = small["wall_s"] - small["jobs_own_s"]  # the start, the checks and the summary, with 2 jobs
        marginal = (r["wall_s"] - r["jobs_own_s"] - fixed) / (r["jobs"] - small["jobs"])
        print(f"run {i + 1}: {r['jobs']} jobs, {r['experiments']} experiments; wall {r['wall_s']:.1f} s "
              f"(ratio to {SWEEP_LIMIT_S:.0f} s: {r['wall_s'] / SWEEP_LIMIT_S:.2f}), CPU {r['cpu_s']:.1f} s, jobs' own "
              f"{r['jobs_own_s']:.1f} s; launch overhead {r['overhead_per_job_s']:.3f} s a job "
              f"(ratio to {LIMIT_S} s: {r['overhead_per_job_s'] / LIMIT_S:.2f}), each further job {marginal:.3f} s "
              f"(ratio {marginal / LIMIT_S:.2f}; the {small['jobs']}-job sweep {small['wall_s']:.1f} s); "
              f"load {os.getloadavg()[0]:.1f}",
              flush=True)


if __name__ == "__main__":
    main()
