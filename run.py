"""Run experiments: one Hydra job per (model, pattern, seed, budget, prompt variant, setting).

    python run.py                                              # a small job on the embedded model
    python run.py -m +experiment=demo                          # the embedded demo, all seven patterns
    python run.py task=sentiment n=100 p=0.7 data_dir=../shared/data/raw
    # a paper model runs the paper's core grid (21 jobs, 270 experiments); count it without a call:
    python run.py -m model=gpt_oss_120b 'pattern=glob(*)' seed=0,1,2 data_dir=../shared/data/raw dry_run=true
"""

import os
import sys
from pathlib import Path

from mip.entry.cli import quiet_library_bars, say_sweep_starts

# torch's OpenMP threads wait passively: spinning, they fight for a busy machine's cores (a
# decoding step of the embedded model took 2.7-5.9 s instead of 0.4-0.6 s; mip/entry/demo_command.py does the same).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
quiet_library_bars()  # before transformers is imported
if __name__ == "__main__":
    say_sweep_starts(sys.argv[1:])  # before the imports below (seconds)

import hydra
from omegaconf import DictConfig

from mip.entry import run_command
from mip.entry.config_store import register

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    run_command.run(cfg)


if __name__ == "__main__":
    run_command.start(main, CONF)
