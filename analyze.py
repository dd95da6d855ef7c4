"""Tables, figures and report.md from stored records (default) or W&B.

    python analyze.py results=[results/store]
    python analyze.py results/sweeps/2026-11-30/10-00-00                     # a sweep's own experiments, into <sweep>/report
    python analyze.py results=[results/sweeps/2026-11-30/10-00-00,results/store] out_dir=paper/figs
    python analyze.py source=wandb results=[results/sweeps]                  # offline W&B run folders
    python analyze.py source=wandb wandb.project=mip wandb.group=sweeps/2026-11-30/10-00-00-3f9a1c
    python analyze.py where.budget=100k where.model=[a,b]                    # some slices only
    python analyze.py core=[20,0.6]                                          # another core (n, p)
"""

import sys

if __name__ == "__main__" and not {"--help", "-h", "--cfg", "-c", "--info", "--hydra-help"} & set(sys.argv[1:]):
    print("analyze.py: reading the records…", flush=True)  # before the imports' seconds; stderr is for errors

from pathlib import Path

import hydra
from omegaconf import DictConfig

from mip.entry import analyze_command
from mip.entry.config_store import register

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="analyze")
def main(cfg: DictConfig) -> None:
    analyze_command.run(cfg, CONF)


if __name__ == "__main__":
    analyze_command.start(main, CONF)
