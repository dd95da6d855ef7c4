"""Audit your own labelled table for order sensitivity (beyond the paper): all seven patterns
at the sizes you name, through a model, into one short report (mip.tools.audit).

    python audit.py --help                                   # the audit.* options
    python audit.py audit.data=reviews.csv audit.labels=[neg,pos] audit.n=[10] audit.p=[0.6]   # offline
    python audit.py audit.data=reviews.csv audit.text_col=review audit.label_col=stars audit.labels=[neg,pos] \\
        audit.question="Determine the majority sentiment label among all provided reviews." model=gpt_oss_120b budget=20k
"""

import sys
from pathlib import Path

from mip.entry.cli import check_keys, check_overrides, quiet_library_bars

quiet_library_bars()  # before transformers is imported

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from mip.tools.audit import SET_BY_THE_AUDIT, check_budget, run_audit
from mip.config import AuditConfig
from mip.tools.config_store import register
from mip.data import DataError
from mip.job import StoreError
from mip.job.stop import JobStopped
from mip.models import BackendSetupError
from mip.entry.refusals import refusals

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="audit")
def main(cfg: DictConfig) -> None:
    # A refusal (exit 2, one line) leaves no audit folder behind.
    try:
        with refusals(HydraConfig.get().runtime.output_dir, None, ValueError, DataError, BackendSetupError, StoreError):
            check_keys(cfg, AuditConfig, "audit.py")
            audit, hydra_cfg = OmegaConf.to_object(cfg), HydraConfig.get()
            check_budget(audit, CONF / "model" / f"{hydra_cfg.runtime.choices.get('model')}.yaml", hydra_cfg.overrides.task)
            path = run_audit(audit)
    except JobStopped as e:  # drained on a signal (mip.job.stop): the same command carries on
        print(f"error: {e}", file=sys.stderr, flush=True)
        e.drain.hand_over()
    print(path.read_text(encoding="utf-8"))
    print(f"Report: {path}")


if __name__ == "__main__":
    check_overrides(sys.argv[1:], AuditConfig, "audit.py", SET_BY_THE_AUDIT, conf_dir=CONF, config_name="audit")
    main()
