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


CHECK_LINE_EVERY_S = 5.0
"""A sweep's checks before launch say how far they are at most this often."""


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

    from omegaconf import OmegaConf

    from mip.config.redact import SecretFilter, mask_streams, secret_values, typed_secrets

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
        for name in _LAUNCHERS:  # they set up Hydra's log again (new handlers), then log each job's overrides
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


_LAUNCHERS = ("hydra._internal.core_plugins.basic_launcher", "hydra_plugins.hydra_submitit_launcher.submitit_launcher")


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


def _sweep_jobs(config: DictConfig) -> list[list[str]] | None:
    """The override lists of the jobs a sweep launches, as Hydra's basic sweeper splits them
    (glob(*) and the presets' sweeper params included); None for another sweeper or what
    cannot be parsed."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not str(config.hydra.sweeper.get("_target_", "")).endswith("BasicSweeper"):
        return None
    try:
        params = [f"{k}={v}" for k, v in (config.hydra.sweeper.params or {}).items()]
        parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
        batches = BasicSweeper.split_arguments(parser.parse_overrides(params + list(config.hydra.overrides.task)), None)
        return [list(job) for batch in batches for job in batch]
    except Exception:  # noqa: BLE001 - progress and checks are no reason to stop a sweep here
        return None


def _override_key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def _jobs_run_here(config: DictConfig) -> bool:
    """Whether the sweep's jobs run on this machine (Hydra's basic launcher, submitit's local
    one), where the model's package and key must be; a cluster launcher runs them on its nodes."""
    target = str(config.hydra.launcher.get("_target_", ""))
    return not target.endswith("SlurmLauncher")


def _sweep_error(config: DictConfig, jobs: list[list[str]] | None, seen: list | None = None) -> str | None:
    """Why a job of the sweep would be refused, asked of every distinct combination of settings
    its jobs get (:func:`_sweep_jobs`) before any job is launched, by the check each job makes
    of itself (:func:`mip.job.check_job`: settings, budget and window, strategy, store, the
    model's package and key where the jobs run here, every task's data); None when every job
    would run. A cluster launcher's jobs run elsewhere: the package (vLLM) and the key are the
    node's, and each job checks them itself before its first call. Seeds never
    change whether a job can run; patterns are checked on one composition each. A sweeper
    other than Hydra's basic one: the command's fixed settings. ``preflight=only`` runs no job:
    only the settings its request is made with. ``seen`` collects each combination checked, as
    (its config, what the check built, the jobs it stands for), for the sweep's cost."""
    from dataclasses import replace

    from hydra import compose
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    from mip.config import Config, PatternConfig
    from mip.data import DataError
    from mip.job import check_job
    from mip.job.checks import settings
    from mip.models import BackendSetupError

    if jobs is None:
        parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
        jobs = [[o.input_line for o in parsed if not o.is_sweep_override()]]
    here = _jobs_run_here(config)  # elsewhere (SLURM): the engine and the key are the node's, checked by the job
    combinations: dict[tuple[str, ...], dict[str | None, list[str]]] = {}
    count: dict[tuple, int] = {}
    for job in jobs:
        rest = tuple(o for o in job if _override_key(o) not in ("seed", "pattern"))
        pattern = next((o.partition("=")[2] for o in job if _override_key(o) == "pattern"), None)
        combinations.setdefault(rest, {}).setdefault(pattern, job)
        count[rest, pattern] = count.get((rest, pattern), 0) + 1
    said = time.monotonic()
    for done, (rest, patterns) in enumerate(combinations.items()):
        if time.monotonic() - said >= CHECK_LINE_EVERY_S:  # a long check says how far it is
            said = time.monotonic()
            print(f"  checked {done} of {len(combinations)} distinct job settings …", flush=True)
        try:
            typed = OmegaConf.to_object(compose(config_name="config", overrides=list(rest)))
        except Exception:  # noqa: BLE001 - a key the schema lacks: run.py's check_keys names it
            continue
        if not isinstance(typed, Config):
            continue
        for pattern, job in patterns.items():
            cfg = replace(typed, pattern=PatternConfig(name=pattern)) if pattern else typed
            try:
                checked = check_job(cfg, builds_backend=here) if config.preflight != "only" else settings(cfg)
                if seen is not None and config.preflight != "only":
                    seen.append((cfg, checked, count[rest, pattern]))
            except (ValueError, DataError, BackendSetupError) as e:
                return f"{e}" + (f" (job {' '.join(job)})" if len(combinations) > 1 else "")
    return None


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
        would be refused (:func:`_sweep_error`); a dry run too, which says what the real sweep
        would say."""
        from hydra.core.global_hydra import GlobalHydra

        from mip.entry.compositions import compose_once, parse_once

        _check_writable(config)
        _filter_logs(config)
        compose_once(GlobalHydra.instance().config_loader())  # the check's composition of a job is the one it runs
        parse_once()  # and each YAML file is parsed once
        jobs = _sweep_jobs(config)  # parsed once: the progress line's total and the checks of every job
        self.sweep, self.done = (os.getpid(), len(jobs), time.monotonic()) if jobs else None, 0
        self.folder = Path(config.hydra.sweep.dir)
        SummaryCallback.running = self
        checked: list = []
        if error := _sweep_error(config, jobs, checked):
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
        from mip.tools.summary import describe, refused_jobs, unstored_jobs
        from mip.tracking.tracker import sync_hint

        SummaryCallback.running = None
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
