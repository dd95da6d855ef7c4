"""Hydra callbacks: check a sweep before it starts, mask secrets in the files Hydra writes for
a job, say how far a sweep is after each job (done/total jobs, rate, ETA: logger
``mip.tracking.progress``), summarise it when it ends."""

from __future__ import annotations

import itertools
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


def _choices(parsed: list, group: str) -> list[str] | None:
    """The values a sweep's parsed overrides give a config group (None when they leave it alone)."""
    for override in parsed:
        if override.get_key_element() == group:
            return list(override.sweep_string_iterator()) if override.is_sweep_override() else [override.get_value_element_as_str()]
    return None


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

    task = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
    try:
        secrets = secret_values(OmegaConf.to_container(task, resolve=True))
    except Exception:  # noqa: BLE001 - an interpolation that fails here fails the job itself, with its message
        secrets = secret_values(OmegaConf.to_container(task, resolve=False))
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


def _swept_settings_error(jobs: list[list[str]]) -> str | None:
    """A sweep of a setting (``n=100,2000``, ``p=0.6,1.5`` …): each distinct setting its jobs
    (:func:`_sweep_jobs`) get, checked as its job would check it, so no job runs (and pays)
    before a later one is refused. Seeds never change whether a job can run."""
    from hydra import compose

    seen: set[tuple[str, ...]] = set()
    for job in jobs:
        settings = tuple(o for o in job if o.partition("=")[0].lstrip("+~") != "seed")
        if settings in seen:
            continue
        seen.add(settings)
        cfg = compose(config_name="config", overrides=list(settings))
        if error := _settings_error(cfg):
            return f"{error} (job {' '.join(job)})"
    return None


def offline_runs(folder: Path) -> list[Path]:
    """The offline W&B runs the jobs under ``folder`` wrote (their manifests name them)."""
    import json

    runs = (json.loads(m.read_text(encoding="utf-8")).get("wandb_offline_run") for m in folder.rglob("job.json"))
    return [Path(r) for r in runs if r]


def _setup_error(model: DictConfig, dry_run: bool) -> str | None:
    """Why a real run of ``model`` cannot start here (its backend's package is missing: vLLM;
    its API key is not set), or None; a dry run builds no backend and needs neither."""
    from mip.models import BackendSetupError, api_key, backend_class

    if dry_run:
        return None
    missing = backend_class(str(model.backend)).unavailable()
    if missing:
        return f"{missing} (model={model.name}; dry_run=true counts its grid without it.)"
    try:
        api_key(model)
    except BackendSetupError as e:
        return str(e)
    return None


def _settings_error(config: DictConfig) -> str | None:
    """Why a job of this composed config would be refused at its start (n, p, order seeds,
    budget, strategy: mip.job.validate), asked before Hydra makes its folder; None when it
    would run, or when its keys are left to run.py's own check."""
    from omegaconf import OmegaConf, open_dict

    from mip.config import Config
    from mip.data import DataError
    from mip.job import validate

    cfg = config.copy()
    with open_dict(cfg):
        cfg.pop("hydra", None)
    try:
        typed = OmegaConf.to_object(cfg)
    except Exception:  # a key the schema lacks: run.py's check_keys names it
        return None
    try:
        if isinstance(typed, Config):
            _CHECKED[OmegaConf.to_yaml(cfg)] = validate(typed)
    except (ValueError, DataError) as e:
        return str(e)
    return None


#: The strategy :func:`_settings_error` built for a run's config, by the config's YAML: run.py
#: hands it to run_job, so that a job builds its strategy once (issue 30).
_CHECKED: dict[str, Any] = {}


def checked_strategy(job_config: DictConfig) -> Any:
    """The strategy the check before this job built for its config (the job's own, without
    Hydra's node), taken once; None where none was built for it (a sweep's jobs are checked per model)."""
    from omegaconf import OmegaConf

    return _CHECKED.pop(OmegaConf.to_yaml(job_config), None)


def _refuse(error: str, sweep: bool = True) -> None:
    print(f"error: {error}{' Nothing was launched.' if sweep else ''}", file=sys.stderr)
    sys.exit(2)


class SummaryCallback(Callback):
    sweep: tuple[int, int, float] | None = None
    """(process, jobs in the sweep, start time), set when a sweep starts in this process."""
    done = 0
    first_done = 0.0
    """When the sweep's first job ended: its ETA counts the jobs after it (mip.tracking.progress.sweep_eta)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_writable(config)
        _filter_logs(config)
        from mip.tools.cli import check_sweep_preset

        check_sweep_preset(config.hydra)  # a preset that sweeps needs -m: said before anything else
        only = config.preflight == "only"  # no job runs: the preflight reports what its request needs
        error = None if only else _setup_error(config.model, config.dry_run) or _settings_error(config)
        if error:  # before Hydra makes the job's folder
            _refuse(error, sweep=False)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        _mask_secrets(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Refuse a sweep with a model whose context window is smaller than a budget, or that
        cannot run here, on the login node before any job is launched; a dry run too (for
        the budget), which says what the real sweep would say. Each swept model is composed
        with the command's other settings, so a paper model brings its own budget."""
        _check_writable(config)
        _filter_logs(config)
        jobs = _sweep_jobs(config)  # parsed once: the progress line's total and the swept settings' checks
        self.sweep, self.done = (os.getpid(), len(jobs), time.monotonic()) if jobs else None, 0
        from hydra import compose
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from omegaconf import OmegaConf

        from mip.job.tokens import budget_error

        task = list(config.hydra.overrides.task)
        overrides = task + [f"{k}={v}" for k, v in (config.hydra.sweeper.params or {}).items()]
        parsed = OverridesParser.create().parse_overrides(overrides)
        models = _choices(parsed, "model") or [config.hydra.runtime.choices.model]
        budgets = _choices(parsed, "budget") or [None]
        fixed = [o.input_line for o in parsed[:len(task)]
                 if not o.is_sweep_override() and o.get_key_element().lstrip("+~") not in ("model", "budget")]
        # A sweep of another setting (n=100,2000 …): checked per distinct setting below.
        swept_settings = any(o.is_sweep_override() and o.get_key_element().lstrip("+~") not in
                             ("model", "budget", "pattern", "seed") for o in parsed)
        for model, budget in itertools.product(models, budgets):
            cfg = compose(config_name="config", overrides=[f"model={model}", *([f"budget={budget}"] if budget else []),
                                                           *fixed])
            error = None if cfg.preflight == "only" else _setup_error(cfg.model, cfg.dry_run)
            if not error and not OmegaConf.is_missing(cfg.model, "context_window"):
                error = budget_error(model, cfg.model.context_window, cfg.budget.name, cfg.budget.max_tokens)
            if not error and not swept_settings and cfg.preflight != "only":  # preflight=only runs no job
                error = _settings_error(cfg)
            if error:
                _refuse(error)
        if swept_settings and config.preflight != "only" and (error := _swept_settings_error(jobs or [])):
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
        from mip.tools.summary import describe, unstored_jobs
        from mip.tracking.tracker import sync_hint

        _CHECKED.clear()  # the sweep's checks that no job in this process took
        folder = Path(config.hydra.sweep.dir)
        here = self.sweep is not None and self.sweep[0] == os.getpid()  # its time: launches included, one time
        print("\n== sweep summary ==\n" + describe(folder, sweep_s=time.monotonic() - self.sweep[2] if here else None),
              flush=True)
        if hint := sync_hint(offline_runs(folder), sweep=folder):
            print(hint, flush=True)
        if unstored_jobs(folder):
            sys.exit(1)  # infrastructure failures left experiments unstored: rerun the same command
