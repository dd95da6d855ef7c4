"""filter.py's command: each filter model's config composed from ``conf/model/<name>.yaml`` as
run.py composes ``model=<name>``, :func:`mip.tools.filtering.run_filter`, its report printed, a
refusal as one line (exit 2, no folder left) and exit 1 where calls are left unstored (rerun to
finish). filter.py itself only declares the Hydra app.

    python filter.py task=sentiment task.sentiment.pool_size=40 filter_models=[mock] data_dir=../shared/data/raw

Exercised by ``pytest tests/test_filtering.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from hydra import compose
from hydra.core.hydra_config import HydraConfig
from hydra.errors import MissingConfigException
from omegaconf import DictConfig, OmegaConf

from mip.config import FilterConfig, ModelConfig
from mip.data import DataError
from mip.entry.cli import check_overrides
from mip.entry.refusals import refusals
from mip.models import BackendSetupError
from mip.tools.filtering import describe, run_filter


def model_config(name: str) -> ModelConfig:
    """A filter model's config, composed from conf/model/<name>.yaml like run.py's model=<name>."""
    try:
        return OmegaConf.to_object(compose(config_name="config", overrides=[f"model={name}"]).model)
    except MissingConfigException:
        raise ValueError(f"Unknown filter model {name!r}: no conf/model/{name}.yaml.") from None


def run(cfg: DictConfig) -> None:
    """The body of filter.py's Hydra app."""
    config: FilterConfig = OmegaConf.to_object(cfg)
    with refusals(HydraConfig.get().runtime.output_dir, None, ValueError, DataError, BackendSetupError):
        report = run_filter(config, [model_config(name) for name in config.filter_models])
    print(describe(report))
    if any(isinstance(pool, dict) for pool in report.get("pools", {}).values()):
        print("run.py now draws instance sets from these filtered pools; if one keeps too few instances for "
              "n·p of a label, pass use_filtered=false to run.py to draw from the unfiltered pool.")
    if any(call["unstored"] for call in report["calls"]):
        sys.exit(1)  # infrastructure failures: rerun the same command to finish


def start(main: Callable[[], None], conf: Path) -> None:
    """``python filter.py …``: the command line checked before Hydra composes, then ``main``."""
    check_overrides(sys.argv[1:], FilterConfig, "filter.py", conf_dir=conf, config_name="filter")
    main()
