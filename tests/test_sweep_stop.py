"""Ctrl-C between a sweep's jobs: a clean stop in one line, with the sweep's
summary so far and the command that carries on — no KeyboardInterrupt traceback through Hydra.
(A stop inside a job is a drained stop: tests/test_stop.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import REPO

# run.py as the shell runs it, with a real SIGINT delivered to the process as the first job ends
# (Hydra's launcher then goes on to the next job): what Ctrl-C between two jobs does.
SCRIPT = """
import os, runpy, signal, sys
from mip.entry import hydra_callbacks
real = hydra_callbacks.SummaryCallback.on_job_end
def on_job_end(self, *args, **kwargs):
    real(self, *args, **kwargs)
    if self.done == 1:
        os.kill(os.getpid(), signal.SIGINT)
hydra_callbacks.SummaryCallback.on_job_end = on_job_end
sys.argv = ["run.py", *sys.argv[1:]]
runpy.run_path("run.py", run_name="__main__")
"""


def test_ctrl_c_between_jobs_stops_in_one_line_with_the_summary_and_the_rerun_command(tmp_path):
    args = ["-m", "model=mock", "task=arith", "setting=smoke", "pattern=majority_first,majority_last,random",
            "progress=false"]
    env = {**os.environ, "MIP_RESULTS_DIR": str(tmp_path / "results"), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 130, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: stopped by Ctrl-C after 1/3 jobs of the sweep in "), last
    assert last.endswith("python run.py " + " ".join(args)), last
    assert "== sweep summary (stopped) ==" in proc.stdout and "1 job(s)" in proc.stdout, proc.stdout[-2000:]
    # the same command carries on: the first job's experiments are stored, the rest are run
    again = subprocess.run([sys.executable, "run.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "already stored" in again.stdout + again.stderr
