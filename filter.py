"""Instance filtering (App. C.1): keep only instances every filter model solves alone.

    python filter.py task=ner filter_models=[qwen36_35b,gemini31_flash_lite] data_dir=../shared/data/raw
    python filter.py task=sentiment task.sentiment.pool_size=40 filter_models=[mock] data_dir=../shared/data/raw

Later runs use the filtered pools by default (run.py use_filtered=false for the unfiltered ones).
"""

import sys
from pathlib import Path

from mip.entry.cli import check_overrides, quiet_library_bars

quiet_library_bars()  # before transformers is imported

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra import compose
from hydra.errors import MissingConfigException
from omegaconf import DictConfig, OmegaConf

from mip.config import FilterConfig, ModelConfig
from mip.tools.config_store import register
from mip.data import DataError
from mip.tools.filtering import describe, run_filter
from mip.models import BackendSetupError
from mip.entry.refusals import refusals

register()


def model_config(name: str) -> ModelConfig:
    """A filter model's config, composed from conf/model/<name>.yaml like run.py's model=<name>."""
    try:
        return OmegaConf.to_object(compose(config_name="config", overrides=[f"model={name}"]).model)
    except MissingConfigException:
        raise ValueError(f"Unknown filter model {name!r}: no conf/model/{name}.yaml.") from None

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="filter")
def main(cfg: DictConfig) -> None:
    config: FilterConfig = OmegaConf.to_object(cfg)
    with refusals(HydraConfig.get().runtime.output_dir, None, ValueError, DataError, BackendSetupError):
        report = run_filter(config, [model_config(name) for name in config.filter_models])
    print(describe(report))
    if any(isinstance(pool, dict) for pool in report.get("pools", {}).values()):
        print("run.py now draws instance sets from these filtered pools; if one keeps too few instances for "
              "n·p of a label, pass use_filtered=false to run.py to draw from the unfiltered pool.")
    if any(call["unstored"] for call in report["calls"]):
        sys.exit(1)  # infrastructure failures: rerun the same command to finish


if __name__ == "__main__":
    check_overrides(sys.argv[1:], FilterConfig, "filter.py", conf_dir=CONF, config_name="filter")
    main()
