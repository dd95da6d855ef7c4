"""Hydra callbacks: check a sweep before it starts, mask secrets in the files Hydra writes for
a job, say how far a sweep is after each job (done/total jobs, rate, ETA: logger
``mip.tracking.progress``), summarise it when it ends."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


def _check_writable(config: DictConfig) -> None:
    """Refuse, in one line, a results folder that cannot be written or is full, before Hydra
    creates the job folder in it (its OSError would come as a traceback, after a 0-byte
    .hydra/config.yaml)."""
    from mip.data.files import unwritable

    folder = Path(str(config.paths.results_dir)).expanduser()
    why = unwritable(folder)
    if why:
        print(f"error: cannot write to the results folder {folder} ({why}); free space, or point paths.results_dir "
              "(or MIP_RESULTS_DIR) at a writable folder. Nothing was written.", file=sys.stderr)
        sys.exit(2)


def _filter_logs(config: DictConfig) -> set[str]:
    """The secrets of ``config`` and of the overrides as typed (mip.config.redact), masked from
    now on in every line logged (run.log, the console: Hydra logs a sweep's overrides) and
    printed."""
    import logging

    from mip.config.masking import SecretFilter, mask_streams
    from mip.config.redact import secret_values, typed_secrets

    keys = [k for k in config if k != "hydra"]  # read in place: a copy of the config cost 0.05 s a job
    try:
        secrets = secret_values({k: _plain(config, k, True) for k in keys})
    except Exception:  # noqa: BLE001 - an interpolation that fails here fails the job itself, with its message
        secrets = secret_values({k: _plain(config, k, False) for k in keys})
    secrets |= typed_secrets(list(config.hydra.overrides.task))
    if secrets:
        mask_streams(secrets)  # what is printed (error lines, bars), not logged
        for handler in logging.getLogger().handlers:
            handler.addFilter(SecretFilter(secrets))
        # the launcher sets up Hydra's log again (new handlers), then logs each job's overrides
        for name in _launcher_logs(config):
            launcher = logging.getLogger(name)
            for old in [f for f in launcher.filters if isinstance(f, SecretFilter)]:
                launcher.removeFilter(old)
            launcher.addFilter(SecretFilter(secrets))
    return secrets


def _plain(config: DictConfig, key: str, resolve: bool) -> Any:
    from omegaconf import OmegaConf

    node = config._get_node(key)
    return OmegaConf.to_container(node, resolve=resolve) if OmegaConf.is_config(node) else (
        config[key] if resolve else node._value())


def _launcher_logs(config: DictConfig) -> list[str]:
    """The logger of the launcher (its module's name: Hydra's launchers log each job's overrides there)."""
    target = str(config.hydra.launcher.get("_target_", ""))
    return [target.rpartition(".")[0]] if target else []


def _mask_secrets(config: DictConfig) -> None:
    """Hydra has written the job's ``.hydra/*.yaml`` (and a sweep's ``multirun.yaml``) with the
    overrides as typed, and set up its log: mask any secret there, and in every line logged."""
    from mip.config.redact import mask_text
    from mip.data.files import atomic_write

    secrets = _filter_logs(config)
    if not secrets:
        return
    output = Path(config.hydra.runtime.output_dir)
    files = list((output / str(config.hydra.output_subdir)).glob("*.yaml")) if config.hydra.output_subdir else []
    files.append(Path(config.hydra.sweep.dir) / "multirun.yaml")
    for path in files:
        if path.is_file() and (text := path.read_text(encoding="utf-8")) != (masked := mask_text(text, secrets)):
            atomic_write(path, masked, durable=False)


def offline_runs(folder: Path) -> list[Path]:
    """The offline W&B runs the jobs under ``folder`` wrote (their manifests name them)."""
    import json

    runs = (json.loads(m.read_text(encoding="utf-8")).get("wandb_offline_run") for m in folder.rglob("job.json"))
    return [Path(r) for r in runs if r]


def _refuse(error: str, sweep: bool = True) -> None:
    print(f"error: {error}{' Nothing was launched.' if sweep else ''}", file=sys.stderr)
    sys.exit(2)


class SummaryCallback(Callback):
    sweep: tuple[int, int, float] | None = None
    """(process, jobs in the sweep, start time), set when a sweep starts in this process."""
    done = 0
    first_done = 0.0
    """When the sweep's first job ended: its ETA counts the jobs after it (mip.tracking.progress.sweep_eta)."""
    running: SummaryCallback | None = None
    """The sweep under way in this process, for :func:`stopped`: the folder and jobs done so far."""
    folder: Path | None = None

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A single run: its job checks its own settings (mip.job.check_job, once), and a
        refused job's folder is removed (mip.entry.refusals)."""
        _check_writable(config)
        _filter_logs(config)
        from mip.entry.cli import check_sweep_preset

        check_sweep_preset(config.hydra)  # a preset that sweeps needs -m: said before anything else

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        _mask_secrets(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Refuse, on the login node and before any job is launched, a sweep any of whose jobs
        would be refused (:func:`mip.entry.sweep_checks.check_sweep`, whose checks the jobs run
        with); a dry run too, which says what the real sweep would say."""
        from mip.entry.sweep_checks import check_sweep, sweep_jobs

        _check_writable(config)
        _filter_logs(config)
        jobs = sweep_jobs(config)  # parsed once: the progress line's total and the checks of every job
        self.sweep, self.done = (os.getpid(), len(jobs), time.monotonic()) if jobs else None, 0
        self.folder = Path(config.hydra.sweep.dir)
        SummaryCallback.running = self
        checked: list = []
        if error := check_sweep(config, jobs, checked):
            _refuse(error)
        from mip.entry.sweep_limits import key_load, sweep_cost_refusal

        if error := sweep_cost_refusal(config, checked):
            _refuse(error.removesuffix(" Nothing was sent."))
        if error := key_load(config, checked):
            _refuse(error)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """A sweep's progress, after each of its jobs that runs in the launching process
        (the basic launcher; a SLURM job runs elsewhere, and its array shows in squeue)."""
        from mip.tracking.progress import sweep_eta

        if self.sweep is None or self.sweep[0] != os.getpid():
            return
        self.done += 1
        _, total, start = self.sweep
        now = time.monotonic()
        if self.done == 1:
            self.first_done = now
        logging.getLogger("mip.progress").info("sweep: %d/%d jobs (%s)", self.done, total,
                                               sweep_eta(self.done, total, start, self.first_done, now))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mip.entry.sweep_checks import forget
        from mip.tools.run_summary import describe, refused_jobs, unstored_jobs
        from mip.tracking.tracker import sync_hint

        SummaryCallback.running = None
        forget()
        folder = Path(config.hydra.sweep.dir)
        here = self.sweep is not None and self.sweep[0] == os.getpid()  # its time: launches included, one time
        print("\n== sweep summary ==\n" + describe(folder, sweep_s=time.monotonic() - self.sweep[2] if here else None),
              flush=True)
        if hint := sync_hint(offline_runs(folder), sweep=folder):
            print(hint, flush=True)
        if refused_jobs(folder):
            sys.exit(2)  # a model was refused (a key, credits, a parameter): fix it, then rerun the same command
        if unstored_jobs(folder):
            sys.exit(1)  # infrastructure failures left experiments unstored: rerun the same command
