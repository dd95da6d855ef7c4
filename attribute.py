"""Input × Gradient position profiles of stored outputs (§5.2, App. F).

    python attribute.py model=qwen3_4b_instruct task=ner results=[results/store]
    python attribute.py model=smollm2_135m task=arith results=[results/store]     # on a laptop CPU
    python attribute.py model=gemma4_31b records_model=gemma4_31b weights=/models/gemma-4-31b-it task=sentiment
"""

from pathlib import Path

from mip.entry.cli import quiet_library_bars

quiet_library_bars()  # before transformers is imported

import hydra
from omegaconf import DictConfig

from mip.entry import attribute_command
from mip.entry.config_store import register

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="attribute")
def main(cfg: DictConfig) -> None:
    attribute_command.run(cfg)


if __name__ == "__main__":
    attribute_command.start(main, CONF)
