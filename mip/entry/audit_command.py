"""audit.py's command: the keys and the budget checked (a paper model at the smoke budget is
refused), :func:`mip.tools.audit.run_audit`, its report printed; a refusal is one line (exit 2)
that leaves no audit folder, a stop on a signal drains what is in flight. audit.py itself only
declares the Hydra app.

    python audit.py audit.data=reviews.csv audit.labels=[neg,pos] audit.n=[10] audit.p=[0.6]

Exercised by ``pytest tests/test_audit.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from mip.config import AuditConfig
from mip.data import DataError
from mip.entry.cli import check_keys, check_overrides
from mip.entry.config_store import with_task_source
from mip.entry.refusals import refusals
from mip.job import StoreError
from mip.job.stop import JobStopped
from mip.models import BackendSetupError
from mip.tools.audit import SET_BY_THE_AUDIT, check_budget, run_audit


def run(cfg: DictConfig, conf: Path) -> None:
    """The body of audit.py's Hydra app; ``conf`` is the config folder (its ``model/`` configs)."""
    try:
        with refusals(HydraConfig.get().runtime.output_dir, None, ValueError, DataError, BackendSetupError, StoreError):
            check_keys(cfg, AuditConfig, "audit.py")
            hydra_cfg = HydraConfig.get()
            audit = with_task_source(OmegaConf.to_object(cfg), hydra_cfg.runtime.config_sources)
            model = conf / "model" / f"{hydra_cfg.runtime.choices.get('model')}.yaml"
            check_budget(audit, model, hydra_cfg.overrides.task)
            path = run_audit(audit)
    except JobStopped as e:  # drained on a signal (mip.job.stop): the same command carries on
        print(f"error: {e}", file=sys.stderr, flush=True)
        e.drain.hand_over()
    print(path.read_text(encoding="utf-8"))
    print(f"Report: {path}")


def start(main: Callable[[], None], conf: Path) -> None:
    """``python audit.py …``: the command line checked before Hydra composes, then ``main``."""
    check_overrides(sys.argv[1:], AuditConfig, "audit.py", SET_BY_THE_AUDIT, conf_dir=conf, config_name="audit")
    main()
