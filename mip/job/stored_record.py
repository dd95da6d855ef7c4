"""The record a job stores for one experiment, made from its attempts (§3.2): the first valid
attempt counts, all are kept; an experiment with no attempt (its prompt overflows the context
window) is an ``input_overflow`` (App. D.1). The job loop (:mod:`mip.job.loop`) decides when an
experiment is final; this module says what its record holds.

>>> from mip.experiment.records import Attempt
>>> attempt = Attempt(index=0, verdict=Verdict.INVALID, invalid_kind=InvalidKind.PARSE)
>>> refused_as_overflow(attempt) is attempt      # no stage was refused for its length
True

Exercised by ``pytest tests/test_runner.py tests/test_records.py``.
"""

from __future__ import annotations

from typing import Any

import mip
from mip.config import Config, to_plain
from mip.experiment import prompts, scoring
from mip.experiment.keys import KEY_SCHEME
from mip.experiment.planning import Planned
from mip.experiment.records import Attempt, Record, counted_attempt
from mip.experiment.scoring import InvalidKind, Verdict
from mip.job.provenance import GitState, now
from mip.job.task_changes import task_changes
from mip.strategies import Strategy


def record_configs(cfg: Config, allowed: int) -> dict[str, dict[str, Any]]:
    """The settings each record of the job carries, by task name: its model, budget, variant,
    strategy…, and what its task changes from the task's shipped file in the config folders the
    config names (``task_source``; :func:`mip.job.task_changes.task_changes`: empty as shipped)."""
    shared = {
        "model": to_plain(cfg.model),
        "budget": to_plain(cfg.budget),
        "prompt_variant": cfg.prompt_variant.name,
        "strategy": to_plain(cfg.strategy),
        "setting": cfg.setting,
        "max_attempts": cfg.max_attempts,
        "attempts_made_at_most": allowed,
        "data_dir": cfg.data_dir,
    }
    return {task.name: {**shared, "task": task_changes(task, cfg.task_source)} for task in cfg.task.values()}


def make_record(plan: Planned, n_tokens: int, attempts: list[Attempt], strategy: Strategy, allowed: int,
                config: dict[str, Any], git: GitState, predictions: list[str | None] | None = None
                ) -> tuple[Record, str]:
    """The experiment's record and the prompt its counted attempt was sent (the strategy's
    final prompt)."""
    counted = counted_attempt(attempts)
    verdict, answer = (counted.verdict, counted.answer) if counted else (Verdict.INVALID, None)
    kind = counted.invalid_kind if counted else InvalidKind.INPUT_OVERFLOW
    prompt = strategy.final_prompt(plan, counted)
    # Built from typed parts by this code alone, so not validated again (a 2,000-id list
    # costs a fraction of a millisecond to check); every read validates.
    record = Record.model_construct(
        key_scheme=KEY_SCHEME,
        key=plan.key,
        experiment=plan.experiment,
        pool_version=plan.pool.version,
        pool_filtered=plan.pool.meta.filtered,
        instance_ids=plan.ids,
        instance_labels=plan.labels,
        prompt_hash=plan.prompt_sha if prompt is plan.prompt else prompts.prompt_hash(prompt),
        prompt_tokens=n_tokens,
        attempts=attempts,
        attempts_allowed=allowed,
        answer=answer,
        verdict=verdict,
        invalid_kind=None if verdict.valid else kind,
        scoring_rule=scoring.RULE_VERSION,
        predictions=predictions,
        reported_counts=counted.counts if counted else None,
        config=config,
        git_commit=git.get("commit"),
        mip_version=mip.__version__,
        created_at=now(),
    )
    return record, prompt


def refused_as_overflow(attempt: Attempt) -> Attempt:
    """An attempt a provider refused as longer than its context window is an input_overflow
    (App. D.1), whatever a strategy read from the empty reply: the paper's verdict however
    the overflow is found (mip.models.overflow)."""
    if not any(stage.context_refusal for stage in attempt.stages):
        return attempt
    return attempt.model_copy(update={"answer": None, "verdict": Verdict.INVALID,
                                      "invalid_kind": InvalidKind.INPUT_OVERFLOW})
