"""Audit your own labelled table for order sensitivity (beyond the paper): all seven patterns
at the sizes you name, through a model, into one short report (mip.tools.audit).

    python audit.py --help                                   # the audit.* options
    python audit.py audit.data=reviews.csv audit.labels=[neg,pos] audit.n=[10] audit.p=[0.6]   # offline
    python audit.py audit.data=reviews.csv audit.text_col=review audit.label_col=stars audit.labels=[neg,pos] \\
        audit.question="Determine the majority sentiment label among all provided reviews." model=gpt_oss_120b budget=20k
"""

from pathlib import Path

from mip.entry.cli import quiet_library_bars

quiet_library_bars()  # before transformers is imported

import hydra
from omegaconf import DictConfig

from mip.entry import audit_command
from mip.entry.config_store import register

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="audit")
def main(cfg: DictConfig) -> None:
    audit_command.run(cfg, CONF)


if __name__ == "__main__":
    audit_command.start(main, CONF)
