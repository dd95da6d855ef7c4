"""A record's prompt, rebuilt by the strategy that made it and checked against its hash.

Exercised by ``pytest tests/test_runner.py tests/test_prompts.py``.
"""

from __future__ import annotations

from mip.config import TaskConfig
from mip.data import Pool
from mip.experiment import prompts
from mip.experiment.planning import Planned
from mip.experiment.records import Attempt, Record, counted_attempt
from mip.strategies import STRATEGIES, Strategy, build, strategy_class


def build_prompt(task: TaskConfig, variant: str, texts: list[str], strategy: Strategy | None = None) -> str | None:
    """The prompt a record's hash covers, built before any call (:meth:`mip.strategies.Strategy.planned_prompt`):
    the prompt variant's (App. B) under the paper's single call, or ``strategy``'s own."""
    return (strategy or strategy_class("single_call")()).planned_prompt(task, variant, texts)


def final_prompt(plan: Planned, counted: Attempt | None) -> str:
    """The prompt a record's hash covers: the last prompt the counted attempt sent
    (:meth:`mip.strategies.Strategy.final_prompt`)."""
    return plan.strategy.final_prompt(plan, counted)


def rebuild_prompt(record: Record, task: TaskConfig, pool: Pool) -> str:
    """The exact prompt of a stored record (see :func:`final_prompt`), checked against its hash.

    Raises ValueError when the pool is not the one the record was drawn from or the
    rebuilt prompt's hash differs from the stored one.
    """
    if pool.version != record.pool_version:
        raise ValueError(f"Record {record.key} was drawn from pool {record.pool_version}, not {pool.version}.")
    try:
        positions = [pool.position(i) for i in record.instance_ids]
    except KeyError as e:
        raise ValueError(f"Record {record.key} names instance {e} that pool {pool.version} does not hold.") from None
    counted = counted_attempt(record.attempts)
    experiment = record.experiment
    plan = Planned(experiment, record.key, task, pool, lambda: positions, strategy_of(record))
    prompt = final_prompt(plan, counted)
    if prompts.prompt_hash(prompt) != record.prompt_hash:
        raise ValueError(f"The rebuilt prompt of record {record.key} does not match its stored hash.")
    return prompt


def strategy_of(record: Record) -> Strategy:
    """The strategy a record was made with, with the settings its config kept."""
    experiment = record.experiment
    if experiment.strategy not in STRATEGIES:
        raise ValueError(f"Record {record.key} was made by strategy {experiment.strategy!r}, which this mip does not "
                         f"register; choose one of {', '.join(STRATEGIES)}.")
    saved = record.config.get("strategy")
    saved = saved if isinstance(saved, dict) else {}
    schema = strategy_class(experiment.strategy).schema
    known = set(schema.__dataclass_fields__) - {"name"}
    settings = schema(**{"name": experiment.strategy, **{k: v for k, v in saved.items() if k in known}})
    return build(settings, experiment.prompt_variant)
