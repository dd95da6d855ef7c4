"""A multirun on a real single-node SLURM cluster through the submitit launcher."""

from __future__ import annotations

import pytest

from mip.store import Store

from .conftest import run_py


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_job_sweep_on_slurm_then_the_same_command_calls_nothing(results, slurm, tmp_path):
    log = tmp_path / "calls.log"
    args = ["-m", "hydra/launcher=slurm_cpu", "hydra.launcher.partition=debug", "hydra.launcher.cpus_per_task=1",
            "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "model=mock", f"model.mock.call_log={log}",
            "task=arith", "setting=smoke", "pattern=majority_first,majority_last", "progress=false"]
    first = run_py(*args, timeout=500)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    assert len(list(Store(results / "store"))) == 4
    calls = log.read_text().splitlines()
    assert len(calls) == 4 and len({line.split()[0] for line in calls}) == 2  # two jobs, two processes
    assert list(results.rglob(".submitit/*"))  # it really went through sbatch
    second = run_py(*args, timeout=500)
    assert second.returncode == 0, second.stderr[-3000:]
    assert log.read_text().splitlines() == calls  # no model call the second time
