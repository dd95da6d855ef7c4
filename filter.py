"""Instance filtering (App. C.1): keep only instances every filter model solves alone.

    python filter.py task=ner filter_models=[qwen36_35b,gemini31_flash_lite] data_dir=../shared/data/raw
    python filter.py task=sentiment task.sentiment.pool_size=40 filter_models=[mock] data_dir=../shared/data/raw

Later runs use the filtered pools by default (run.py use_filtered=false for the unfiltered ones).
"""

from pathlib import Path

from mip.entry.cli import quiet_library_bars

quiet_library_bars()  # before transformers is imported

import hydra
from omegaconf import DictConfig

from mip.entry import filter_command
from mip.entry.config_store import register

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="filter")
def main(cfg: DictConfig) -> None:
    filter_command.run(cfg)


if __name__ == "__main__":
    filter_command.start(main, CONF)
