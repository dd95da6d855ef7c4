"""The Hydra hook of ``preflight=only|required`` (:mod:`mip.tools.preflight`): before any job of a
run or sweep is launched, on the machine the command runs on.

- ``preflight=only``: one request per distinct (model, body) of the sweep — not one per job —
  each reported in one line and kept under ``<results_dir>/preflight/``; then the command
  ends without running a job: exit 0 when every preflight passed, else 1.
- ``preflight=required``: the sweep is refused in one line (exit 2), nothing launched, unless
  each of its (model, body) has a passing preflight on file. A dry run spends nothing and
  is never refused.

The gate fails closed: any error while checking (composing a model's config with the
command's launcher and site files, reading the preflight folder) is one line and exit 2
before any job or ``sbatch`` call — Hydra would turn a callback's exception into a warning
and launch the sweep.

Backends with nothing to pay for (vllm, hf, mock, simulated) are said so and pass.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, Iterator

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from mip.config import Config


def sweep_configs(config: DictConfig) -> Iterator[Config]:
    """One config per model and budget the command gives (the only choices that shape a request
    body), with its fixed ``model.``/``budget.`` overrides."""
    from hydra import compose
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from mip.entry.per_job import as_given

    task = list(config.hydra.overrides.task)
    overrides = task + [f"{k}={v}" for k, v in (config.hydra.sweeper.params or {}).items()]
    choices: dict[str, list[str]] = {}
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.get_key_element()
        if key in ("model", "budget"):
            choices[key] = list(override.sweep_string_iterator()) if override.is_sweep_override() \
                else [override.get_value_element_as_str()]
    models = choices.get("model") or [config.hydra.runtime.choices.model]
    budgets = choices.get("budget") or [config.hydra.runtime.choices.budget]
    fixed = [as_given(o) for o in task if o.split("=")[0].lstrip("+~").startswith(("model.", "budget.", "paths.",
                                                                                    "preflight_"))]
    # the command's own hydra overrides: the user's model files (searchpath) and the launcher it
    # chose, so a site file that sets hydra.launcher.partition composes here as it does for the sweep
    fixed += list(config.hydra.overrides.hydra)
    for model, budget in itertools.product(models, budgets):
        overrides = [f"model={model}", f"budget={budget}", *fixed]
        cfg = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
        cfg.dry_run = bool(config.get("dry_run", False))
        yield cfg


def check(configs: list[Config], mode: str) -> int | None:
    """Run or require the preflights; the exit code to end with, or None to go on with the jobs."""
    from mip.tools import preflight
    from mip.models import BackendSetupError

    seen: set[tuple[str, str]] = set()
    failed, missing = 0, []
    for cfg in configs:
        if cfg.model.backend != "openai_compat":
            if mode == "only":
                print(_nothing_to_pay(cfg), flush=True)
            continue
        _, key = preflight.body_key(cfg)
        if (cfg.model.name, key) in seen:
            continue
        seen.add((cfg.model.name, key))
        if mode == "required":
            path, why = (None, "") if cfg.dry_run else preflight.passing_on_file(cfg)
            if not cfg.dry_run and path is None:
                missing.append(f"{cfg.model.name} (budget {cfg.budget.name}, body {key}"
                               + (f"; not used: {why}" if why else "") + ")")
            continue
        try:
            found = preflight.run_preflight(cfg)
        except BackendSetupError as e:  # no key, no model listing: one line, as a job would say it
            print(f"error: {e}", file=sys.stderr)
            return 2
        path = preflight.write(cfg, found)
        print(preflight.describe(found, path), flush=True)
        failed += not found.passed
    if missing:
        print(f"error: preflight=required and no passing preflight on file for {'; '.join(missing)}: run the same "
              "command with preflight=only first (one short request per model). Nothing was launched.", file=sys.stderr)
        return 2
    if mode == "only":
        return 1 if failed else 0
    return None


def _nothing_to_pay(cfg: Config) -> str:
    if cfg.model.backend == "vllm":
        return (f"{cfg.model.name}: vllm runs on your own GPU, nothing to pay for: preflight is a no-op (a dry run "
                "counts its GPU hours).")
    return f"{cfg.model.name}: backend {cfg.model.backend} calls no paid API, nothing to pay for: preflight is a no-op."


class PreflightCallback(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._gate(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._gate(config)

    @staticmethod
    def _gate(config: DictConfig) -> None:
        mode = config.get("preflight", "off")
        if mode == "off":
            return
        if mode not in ("only", "required"):
            print(f"error: preflight={mode!r}; choose off, only or required.", file=sys.stderr)
            sys.exit(2)
        try:
            code = check(list(sweep_configs(config)), mode)
        except Exception as e:  # noqa: BLE001 - the gate fails closed: Hydra would make this a warning and launch
            why = " ".join(f"{type(e).__name__}: {e}".split())
            print(f"error: preflight={mode} and the preflight could not be checked ({why[:600]}). Nothing was "
                  "launched; fix the cause, or run with preflight=off to launch without the check.", file=sys.stderr)
            sys.exit(2)
        if code is not None:
            sys.exit(code)
