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
from mip.tools.audit import run_audit

#: What the audit sets for each of its jobs, and what to write instead; audit.py refuses these
#: keys on its command line rather than ignore them.
SET_BY_THE_AUDIT = {
    "n": "the audit sets it for each job; give the sizes as audit.n=[100,500]",
    "p": "the audit sets it for each job; give the proportions as audit.p=[0.6,0.7]",
    "seed": "the audit sets it for each job; give the selection seeds as audit.seeds=[0,1,2]",
    "pattern": "the audit runs all seven patterns",
    "task": "the audit builds its task from audit.data, audit.labels and audit.question",
    "setting": "the audit's records carry setting=audit",
    "dry_run": "the audit has no dry run (run.py dry_run=true with a task file counts a grid's tokens and cost)",
}


def paper_model(model_config: Path) -> bool:
    """Whether a model config (``conf/model/<name>.yaml``) is one of the paper's, which run the
    paper's grid and budget in run.py (``model_defaults: paper``); audit.py drops those defaults.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "m.yaml").write_text("defaults: [override /model_defaults@_global_.model_defaults: paper]")
    >>> paper_model(folder / "m.yaml"), paper_model(folder / "none.yaml")
    (True, False)
    """
    if not model_config.is_file():
        return False
    defaults = OmegaConf.load(model_config).get("defaults") or []
    return any(isinstance(d, DictConfig) and any(str(k).split("@")[0].strip("/").endswith("model_defaults")
                                                 and v == "paper" for k, v in d.items()) for d in defaults)


def check_budget(cfg: AuditConfig, model_config: Path, overrides: list[str]) -> None:
    """Refuse a paper model (its config file ``model_config``) on the audit's default budget
    (``smoke``, 320 tokens) unless the command line (``overrides``) names a budget: its
    reasoning overruns 320 tokens, so every answer would be cut off and still paid for.

    >>> from mip.config import BudgetConfig
    >>> check_budget(AuditConfig(budget=BudgetConfig(name="smoke", max_tokens=320)), Path("no.yaml"), [])
    """
    named = any(o.lstrip("+~").split("=")[0].split(".")[0] == "budget" for o in overrides)
    if cfg.budget.name == "smoke" and not named and paper_model(model_config):
        raise ValueError(
            f"budget=smoke, audit.py's default, caps each answer at {cfg.budget.max_tokens} tokens, which "
            f"{cfg.model.name}'s reasoning overruns: every answer would be cut off and still paid for. Name a "
            "budget: budget=20k (the paper's) or budget=smoke to run it anyway.")


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
