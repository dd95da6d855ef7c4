"""Hydra callbacks: print one summary over all jobs when a multirun ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class SummaryCallback(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mip.summary import describe

        print("\n== sweep summary ==\n" + describe(Path(config.hydra.sweep.dir)), flush=True)
