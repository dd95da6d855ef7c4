"""Hydra callbacks: check a sweep before it starts, summarise it when it ends."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


def _choices(overrides: list[str], group: str) -> list[str] | None:
    """The values a sweep gives a config group (None when the command leaves it alone)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for override in OverridesParser.create().parse_overrides(overrides):
        if override.get_key_element() == group:
            return list(override.sweep_string_iterator()) if override.is_sweep_override() else [override.get_value_element_as_str()]
    return None


def _check_writable(config: DictConfig) -> None:
    """Refuse, in one line, a results folder that cannot be written, before Hydra creates
    the job folder in it (its OSError would come as a traceback)."""
    import tempfile

    folder = Path(str(config.paths.results_dir)).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as e:
        print(f"error: cannot write to the results folder {folder} ({e.strerror or e}); point paths.results_dir "
              "(or MIP_RESULTS_DIR) at a writable folder.", file=sys.stderr)
        sys.exit(2)


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
        validate(typed) if isinstance(typed, Config) else None
    except (ValueError, DataError) as e:
        return str(e)
    return None


def _refuse(error: str, sweep: bool = True) -> None:
    print(f"error: {error}{' Nothing was launched.' if sweep else ''}", file=sys.stderr)
    sys.exit(2)


class SummaryCallback(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_writable(config)
        error = _setup_error(config.model, config.dry_run) or _settings_error(config)
        if error:  # before Hydra makes the job's folder
            _refuse(error, sweep=False)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Refuse a sweep with a model whose context window is smaller than a budget, or that
        cannot run here, on the login node before any job is launched; a dry run too (for
        the budget), which says what the real sweep would say. Each swept model is composed
        with the command's other settings, so a paper model brings its own budget."""
        _check_writable(config)
        from hydra import compose
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from omegaconf import OmegaConf

        from mip.job.tokens import budget_error

        task = list(config.hydra.overrides.task)
        overrides = task + [f"{k}={v}" for k, v in (config.hydra.sweeper.params or {}).items()]
        models = _choices(overrides, "model") or [config.hydra.runtime.choices.model]
        budgets = _choices(overrides, "budget") or [None]
        parsed = OverridesParser.create().parse_overrides(overrides)
        fixed = [o.input_line for o in parsed[:len(task)]
                 if not o.is_sweep_override() and o.get_key_element().lstrip("+~") not in ("model", "budget")]
        # A sweep of another setting (n=100,2000 …): each job checks its own values.
        swept_settings = any(o.is_sweep_override() and o.get_key_element().lstrip("+~") not in
                             ("model", "budget", "pattern", "seed") for o in parsed)
        for model, budget in itertools.product(models, budgets):
            cfg = compose(config_name="config", overrides=[f"model={model}", *([f"budget={budget}"] if budget else []),
                                                           *fixed])
            error = _setup_error(cfg.model, cfg.dry_run)
            if not error and not OmegaConf.is_missing(cfg.model, "context_window"):
                error = budget_error(model, cfg.model.context_window, cfg.budget.name, cfg.budget.max_tokens)
            if not error and not swept_settings:
                error = _settings_error(cfg)
            if error:
                _refuse(error)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mip.summary import describe, unstored_jobs

        folder = Path(config.hydra.sweep.dir)
        print("\n== sweep summary ==\n" + describe(folder), flush=True)
        if unstored_jobs(folder):
            sys.exit(1)  # infrastructure failures left experiments unstored: rerun the same command
