"""A job's expected cost in USD before it runs, as its dry run counts it: one attempt per
experiment still to run, each sending what its strategy sends, every output limit used whole,
at the model's prices (:mod:`mip.job.dry_run`); and the spend a sweep's jobs reported so far.

>>> expected_usd(compose("model=gpt_oss_120b", "task=arith", "n=20"), checked)   # doctest: +SKIP
0.0016

>>> import tempfile
>>> reported_so_far(Path(tempfile.mkdtemp()))
0.0
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mip.experiment.planning import plan_job
from mip.experiment.spend import cost_usd
from mip.job.dry_run import dry_run
from mip.job.job_summary import JobSummary
from mip.job.tokens import OfflineTokenizer
from mip.store import Store

if TYPE_CHECKING:
    from mip.config import Config
    from mip.job.checks import CheckedJob


def priced(cfg: Config) -> bool:
    """Whether the job calls a model that has a price (an API model with both prices set)."""
    return cfg.model.price_input_per_mtok is not None and cfg.model.price_output_per_mtok is not None


def expected_usd(cfg: Config, checked: CheckedJob, said_in: str | Path = "") -> float | None:
    """The job's expected cost (None: its model has no price); the store is read, never written."""
    if not priced(cfg):
        return None
    store = Store(cfg.paths.store_dir, readonly=True)
    plans = plan_job(cfg, checked.pools, checked.strategy)
    stored: dict[str, set[str]] = {}
    for p in plans:
        if p.experiment.task not in stored:
            stored[p.experiment.task] = store.keys(cfg.model.name, p.experiment.task)
    todo = [p for p in plans if p.key not in stored[p.experiment.task]]
    summary = JobSummary("", str(store.root), experiments=len(plans), already_stored=len(plans) - len(todo),
                         stored_now=0, unstored=0, calls=0, dry_run=True)
    dry_run(cfg, checked.strategy, todo, summary, OfflineTokenizer(cfg.model, cfg.paths.cache_dir, said_in=said_in))
    sent = sum(t["sent_prompt_tokens"] for t in summary.per_task.values())
    return (sent * cfg.model.price_input_per_mtok + summary.max_output_tokens * cfg.model.price_output_per_mtok) / 1e6


def reported_so_far(sweep: Path, but: Path | None = None) -> float:
    """What the provider reported the jobs under ``sweep`` spent (their manifests' ``usage.cost``
    sums), leaving out the job folder ``but``."""
    spent = 0.0
    for manifest in Path(sweep).glob("*/job.json"):
        if but is not None and manifest.parent.resolve() == Path(but).resolve():
            continue
        try:
            spent += cost_usd(json.loads(manifest.read_text(encoding="utf-8")).get("reported_cost_usd")) or 0.0
        except (OSError, ValueError):
            continue
    return spent
