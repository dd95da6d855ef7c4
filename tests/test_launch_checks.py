"""A sweep's checks before launch, through run.py: what the submitting machine
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
    assert "vLLM installed" not in ran.stderr and "SLURM cannot take jobs" in ran.stderr  # refused by sbatch only


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
    """mip's sweeper composes each job to check it before launch, and its launcher runs that
    composition instead of composing the job again (mip.entry.compositions.ComposedOnce)."""
    from mip.entry.compositions import ComposedOnce

    loaders: list[ComposedOnce] = []
    original = ComposedOnce.__init__

    def recorded(self, *args, **kwargs):
        original(self, *args, **kwargs)
        loaders.append(self)

    monkeypatch.setattr(ComposedOnce, "__init__", recorded)
    ran = run_entry("run.py", "-m", "model=simulated_first_k", "seed=0,1", *SWEEP)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert [loader.counts for loader in loaders] == [{"composed": 4, "reused": 4}]  # 2 patterns × 2 seeds, once each
    assert len(list(results.rglob("job.json"))) == 4


def test_a_sweep_whose_job_cannot_be_composed_launches_nothing(tmp_path):
    """mip's sweeper composes every job before it launches the first, as Hydra's basic sweeper
    does: a job that cannot be composed stops the sweep before anything runs; otherwise the
    launcher gets every job, in the basic sweeper's order."""
    from hydra.types import HydraContext
    from omegaconf import OmegaConf

    from hydra_plugins.mip_sweeper import MipSweeper
    from mip.entry.compositions import ComposedOnce

    class Loader:
        def load_sweep_config(self, master_config, overrides):
            if "b=y" in overrides:
                raise ValueError("cannot compose b=y")
            return {"overrides": overrides}

    class Launcher:
        launched: list = []

        def launch(self, batch, initial_job_idx):
            self.launched += [loader.load_sweep_config(sweeper.config, job) for job in batch]
            return []

    sweeper = MipSweeper(params={"a": "1,2"})
    sweeper.config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}}})
    loader = ComposedOnce(Loader())
    sweeper.hydra_context, sweeper.launcher = HydraContext(config_loader=loader, callbacks=None), Launcher()
    with pytest.raises(ValueError, match="cannot compose b=y"):
        sweeper.sweep(["b=x,y"])
    assert Launcher.launched == []
    sweeper.sweep(["b=x,z"])
    assert [c["overrides"] for c in Launcher.launched] == [["a=1", "b=x"], ["a=1", "b=z"], ["a=2", "b=x"],
                                                           ["a=2", "b=z"]]
    assert loader.counts == {"composed": 6, "reused": 4}  # the 4 jobs once each, and the refused sweep's two


def test_each_yaml_file_is_parsed_once_and_composed_afresh(tmp_path):
    """Hydra reads a config folder through mip's config source (mip.entry.parsed_once), found as
    a plugin: each file parsed once, a composition never sees another's changes, and a file
    changed on disk is read again."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from mip.entry import parsed_once

    (tmp_path / "config.yaml").write_text("a: 1\nb: [x]\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        sources = GlobalHydra.instance().config_loader().get_sources()
        assert any(isinstance(s, parsed_once.ParsedOnceSource) and s.path == str(tmp_path) for s in sources), sources
        first = compose("config")
        first.b.append("y")
        assert compose("config").b == ["x"]
        assert sum(key[0] == str(tmp_path / "config.yaml") for key in parsed_once._PARSED) == 1
        (tmp_path / "config.yaml").write_text("a: 22\nb: [x]\n")
        assert compose("config").a == 22


@pytest.mark.parametrize("overrides", [["pattern=a,b", "seed=0,1,2", "model=x,y"], ["seed=range(0,3)", "n=5"],
                                       ["seed=0,1", "n=5", "seed=3,4"], []])
def test_mips_sweeper_splits_a_sweep_as_hydras_basic_sweeper(overrides):
    """The jobs, and their order, are Hydra's basic sweeper's: a Hydra upgrade that changes
    how a sweep is split fails here, not silently in a sweep."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper  # the reference, in this test only
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from mip.entry.compositions import split_jobs

    parsed = OverridesParser.create().parse_overrides(overrides)
    for size in (None, 2):
        assert split_jobs(parsed, size) == BasicSweeper.split_arguments(parsed, size)


def test_a_sweeps_jobs_run_with_the_sweeps_check(results, monkeypatch):
    """One check a job: the sweep checks each combination of settings before launch (reading
    its pools), and each job runs with that check instead of making its own."""
    import mip.job.checks as checks

    read: list[tuple[str, ...]] = []
    original = checks.load_pools

    def counted(cfg):
        read.append(tuple(cfg.task))
        return original(cfg)

    monkeypatch.setattr(checks, "load_pools", counted)
    ran = run_entry("run.py", "-m", "model=simulated_first_k", "seed=0,1", *SWEEP)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(list(results.rglob("job.json"))) == 4
    assert read == [("arith",), ("arith",)], read  # the sweep's check of each pattern; none by the 4 jobs
    read.clear()
    ran = run_entry("run.py", "model=simulated_first_k", "task=arith", "setting=smoke", "pattern=majority_first")
    assert ran.returncode == 0 and read == [("arith",)], ran.stderr[-2000:]  # a job alone checks itself, once


def test_a_launcher_that_cannot_start_is_one_line_and_leaves_no_folder(results, tmp_path):
    """SLURM refuses the submission here (an sbatch that cannot reach a cluster): one line that
    says what to do, exit 2, no traceback, and no sweep folder left behind."""
    env, log = _failing_sbatch(tmp_path)
    ran = run_entry("run.py", "-m", "hydra/launcher=slurm_cpu", "model=mock", "preflight=off", *SWEEP, env=env)
    assert log.exists(), ran.stderr[-2000:]  # it did try to submit
    assert ran.returncode == 2 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert ran.stderr.startswith("error: ") and "Traceback" not in ran.stderr and "sbatch: error: no cluster" in ran.stderr
    assert "login node" in ran.stderr and "hydra/launcher=local" in ran.stderr
    assert not (results / "sweeps").exists(), list((results / "sweeps").rglob("*"))  # nor its empty day or sweeps/


@pytest.mark.parametrize("launcher", ["slurm_cpu", "slurm_gpu"])
def test_a_dry_run_with_a_slurm_launcher_submits_nothing(results, tmp_path, launcher):
    """A dry run counts on the submitting machine (no call, no GPU, no key): nothing goes to
    sbatch, each job says what it would run, and the sweep ends as a dry run does."""
    env, log = _failing_sbatch(tmp_path)
    ran = run_entry("run.py", "-m", f"hydra/launcher={launcher}", "model=mock", "dry_run=true", *SWEEP, env=env)
    assert not log.exists(), ran.stderr[-2000:]
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "dry run: the jobs run here, one after another, and nothing is submitted" in ran.stderr + ran.stdout
    assert (ran.stderr + ran.stdout).count("would run") == 2


def test_a_sweep_over_models_takes_a_key_only_they_have(results):
    """``model.base_url=`` beside ``-m model=a,b``: Hydra composes the sweep's primary config with
    the default model, whose schema has no base_url; each job gets it on its own model."""
    from omegaconf import OmegaConf

    url = "http://127.0.0.1:9/v1"
    ran = run_entry("run.py", "-m", "model=gpt_oss_120b,gemma4_31b", f"model.base_url={url}", "task=arith",
                    "setting=smoke", "pattern=majority_first", "progress=false", "dry_run=true")
    assert ran.returncode == 0, ran.stderr[-2000:]
    configs = sorted(results.glob("sweeps/*/*/*/.hydra/config.yaml"))
    assert [(c.model.name, c.model.base_url) for c in map(OmegaConf.load, configs)] == [
        ("gpt_oss_120b", url), ("gemma4_31b", url)]
    overrides = OmegaConf.load(configs[0].parent / "overrides.yaml")
    assert f"model.base_url={url}".replace(":", "\\:") in overrides  # as written (Hydra escapes the colons)
