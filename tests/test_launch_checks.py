"""A sweep's checks before launch (issue 42), through run.py: what the submitting machine
checks when the jobs run elsewhere, and that a sweep's jobs are composed once each."""

from __future__ import annotations

import importlib.util

import pytest

from .conftest import run_entry

SWEEP = ("task=arith", "setting=smoke", "pattern=majority_first,majority_last", "progress=false")


def _failing_sbatch(tmp_path) -> tuple[dict, object]:
    """An ``sbatch`` first on PATH that records its call and refuses it (no cluster here): a
    sweep that reaches it was handed to the cluster launcher, past every check before launch."""
    import os

    folder, log = tmp_path / "bin", tmp_path / "sbatch.log"
    folder.mkdir()
    (folder / "sbatch").write_text(f"#!/bin/sh\necho \"$@\" >> {log}\necho 'sbatch: error: no cluster' >&2\nexit 1\n")
    (folder / "srun").write_text("#!/bin/sh\nexit 1\n")  # submitit looks for it before it submits
    for tool in ("sbatch", "srun"):
        (folder / tool).chmod(0o755)
    return {"PATH": f"{folder}:{os.environ['PATH']}"}, log


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_a_vllm_sweep_for_slurm_is_submitted_from_a_machine_without_vllm(results, tmp_path):
    """The login node has no vLLM; the GPU nodes do: the pre-check leaves the engine to the job."""
    env, log = _failing_sbatch(tmp_path)
    ran = run_entry("run.py", "-m", "hydra/launcher=slurm_gpu", "model=qwen36_35b", *SWEEP, env=env)
    assert log.exists(), ran.stderr[-2000:]  # handed to sbatch: not refused for the missing vLLM
    assert "vLLM installed" not in ran.stderr and "Nothing was launched" not in ran.stderr


def test_an_api_sweep_for_slurm_is_submitted_without_the_key_here(results, tmp_path, monkeypatch):
    """The key is the job's: exported in the job's environment on the node, not the login shell's."""
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    env, log = _failing_sbatch(tmp_path)
    ran = run_entry("run.py", "-m", "hydra/launcher=slurm_cpu", "model=gpt_oss_120b", *SWEEP, env=env)
    assert log.exists(), ran.stderr[-2000:]
    assert "OPENROUTER_API_KEY" not in ran.stderr


def test_a_slurm_sweep_is_still_refused_for_what_the_submitting_machine_can_check(results, tmp_path):
    """Data, budget and window, strategy: one line, exit 2, sbatch never called."""
    env, log = _failing_sbatch(tmp_path)
    ran = run_entry("run.py", "-m", "hydra/launcher=slurm_gpu", "model=qwen36_35b", "budget=smoke",
                    "budget.max_tokens=0", *SWEEP, env=env)
    assert ran.returncode == 2 and "budget.max_tokens must be positive" in ran.stderr, ran.stderr
    assert not log.exists()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_a_vllm_sweep_run_here_is_refused_without_vllm(results):
    """Hydra's basic launcher runs the jobs on this machine: the engine must be here."""
    ran = run_entry("run.py", "-m", "model=qwen36_35b", *SWEEP)
    assert ran.returncode == 2 and "vLLM installed" in ran.stderr and "Nothing was launched" in ran.stderr, ran.stderr


def test_a_sweeps_jobs_are_composed_once_each(results, monkeypatch):
    """Hydra's sweeper composes each job to check it and its launcher composed it again; the
    launcher now runs the check's composition (mip.entry.compositions)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    composed: list[tuple[str, ...]] = []
    original = ConfigLoaderImpl.load_sweep_config

    def counted(self, master_config, sweep_overrides):
        composed.append(tuple(sweep_overrides))
        return original(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counted)
    ran = run_entry("run.py", "-m", "model=simulated_first_k", "seed=0,1", *SWEEP)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(composed) == 4 and len(set(composed)) == 4, composed  # 2 patterns × 2 seeds, once each
    assert len(list(results.rglob("job.json"))) == 4


def test_each_yaml_file_is_parsed_once_and_composed_afresh(tmp_path):
    """mip.entry.compositions.parse_once: a composition never sees another's changes, and a
    file changed on disk is read again."""
    from hydra import compose, initialize_config_dir

    from mip.entry.compositions import parse_once

    parse_once()
    (tmp_path / "config.yaml").write_text("a: 1\nb: [x]\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        first = compose("config")
        first.b.append("y")
        assert compose("config").b == ["x"]
        (tmp_path / "config.yaml").write_text("a: 22\nb: [x]\n")
        assert compose("config").a == 22
