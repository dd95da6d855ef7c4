"""mip's Hydra sweeper (``hydra/sweeper=mip``, conf/hydra/sweeper/mip.yaml): Hydra's basic sweeper
(one job per combination of the swept values, ``hydra.sweeper.params`` included) whose launcher
runs the composition the sweeper checked instead of composing each job a second time.

A Hydra plugin lives in the ``hydra_plugins`` namespace package, where Hydra finds it; the
logic is mip's (:mod:`mip.entry.compositions`). Hydra finds mip's config source here too: each
YAML file of ``conf/`` parsed once a process (:mod:`mip.entry.parsed_once`).
"""

from __future__ import annotations

import copy
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from mip.entry.parsed_once import ParsedOnceSearchPath, ParsedOnceSource  # noqa: F401 - found here by Hydra

log = logging.getLogger(__name__)

#: Hydra's basic launcher: the jobs one after another in this process (``hydra/launcher=local``).
BASIC = "BasicLauncher"


class MipSweeper(Sweeper):
    """Split the sweep into jobs, compose each once to check it, and launch them."""

    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        super().__init__()
        self.max_batch_size, self.params = max_batch_size, dict(params or {})
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from mip.entry.compositions import ComposedOnce

        here = str(config.hydra.launcher.get("_target_", "")).endswith(BASIC)  # composes in this process
        launching = config
        if config.get("dry_run") is True and not here:  # a dry run calls nothing: counted here, never submitted
            launching = copy.deepcopy(config)
            with open_dict(launching.hydra):
                launching.hydra.sweep.dir = str(config.hydra.sweep.dir)  # the sweep's folder, not one resolved anew
                # Hydra's own launcher config, as ``hydra/launcher=basic`` selects it (its ConfigStore entry)
                launching.hydra.launcher = ConfigStore.instance().load("hydra/launcher/basic.yaml").node
            here = True
            launcher = str(config.hydra.launcher.get("_target_")).rpartition(".")[2]
            print(f"dry run: the jobs run here, one after another, and nothing is submitted ({launcher} not used).",
                  file=sys.stderr, flush=True)
        loader = ComposedOnce(hydra_context.config_loader, keep=here)
        self.config = config
        self.hydra_context = HydraContext(config_loader=loader, callbacks=hydra_context.callbacks)
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=self.hydra_context, task_function=task_function, config=launching)

    def sweep(self, arguments: list[str]) -> Any:
        from mip.entry.compositions import split_jobs
        from mip.entry.launch_failure import refused_launch

        assert self.config is not None and self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        params = [f"{k}={v}" for k, v in self.params.items()]
        batches = split_jobs(parser.parse_overrides(params + list(arguments)), self.max_batch_size)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        returns, first = [], 0
        for batch in batches:
            self.validate_batch_is_legal(batch)
            with refused_launch(sweep_dir, submitted=first):  # a launcher that cannot start: one line
                results = self.launcher.launch(batch, initial_job_idx=first)
            for r in results:
                _ = r.return_value  # a failed job raises here, as with Hydra's basic sweeper
            first += len(batch)
            returns.append(results)
        return returns

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Compose every job of the batch before any is launched (a composition error stops the
        sweep here, not midway); the launcher then runs these compositions."""
        assert self.hydra_context is not None
        for overrides in batch:
            self.hydra_context.config_loader.compose(self.config, list(overrides))
