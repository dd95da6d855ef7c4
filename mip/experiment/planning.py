"""Expanding a job into experiments and building their prompts — pure functions.

A job is one (model, pattern, seed, budget, prompt variant, setting) over its tasks,
both majority labels and, for ``random``, every order seed.

>>> plans = plan_job(cfg, pools)          # doctest: +SKIP
>>> len(plans)                            # 5 tasks × 2 labels × 3 order seeds for random  # doctest: +SKIP
30

Exercised by ``pytest tests/test_runner.py tests/test_prompts.py``.

>>> import numpy as np
>>> arranged(np.array([10, 11, 12]), np.array([20]), "majority_first", None, None).tolist()
[10, 11, 12, 20]
>>> arranged(np.array([10, 11, 12]), np.array([20]), "majority_last", None, None).tolist()
[20, 10, 11, 12]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING

import numpy as np

from mip.experiment import prompts
from mip.config import Config, TaskConfig
from mip.data import Instance, Pool
from mip.experiment.instances import (arrangement, order_seeds_for, pattern_of, picked, select, shuffle_within_labels,
                                      structured)
from mip.experiment.keys import answer_settings, encode_settings, experiment_key, task_settings
from mip.data.columns import JsonColumn
from mip.experiment.records import Experiment

if TYPE_CHECKING:  # strategies sit above the planner: it is handed the job's strategy
    from mip.strategies import Strategy


@dataclass
class Planned:
    """One experiment with everything needed to call the model and store the result.

    The instances are arranged and the prompt built on first use, so a rerun that finds
    an experiment stored does neither, and a job builds each (often 200 KB) prompt only
    when its request is about to go out; :meth:`release` drops them once it is stored.
    """

    experiment: Experiment
    key: str
    task: TaskConfig
    pool: Pool
    arrangement: Callable[[], Sequence[int]]
    """Returns the presented instances as positions in the pool, in prompt order."""
    strategy: Strategy
    """The job's strategy (its own prompt, if it has one, is built by it)."""

    @cached_property
    def positions(self) -> np.ndarray:
        return np.asarray(self.arrangement(), dtype=np.intp)

    @cached_property
    def instances(self) -> list[Instance]:
        return picked(self.pool.instances, self.positions.tolist())

    @cached_property
    def texts(self) -> list[str]:
        return self.pool.columns.texts[self.positions].tolist()

    @property
    def ids(self) -> Sequence[str]:
        """The presented instance ids, in prompt order."""
        return _taken(self.pool.columns.ids_json, self.pool.columns.ids, self.positions)

    @property
    def labels(self) -> Sequence[str]:
        """The gold label of each presented instance, in prompt order."""
        return _taken(self.pool.columns.labels_json, self.pool.columns.labels, self.positions)

    def release(self) -> None:
        """Forget the arrangement, texts and prompt (rebuilt on demand); the prompt's hash stays."""
        for name in ("positions", "instances", "texts", "prompt"):
            self.__dict__.pop(name, None)

    @cached_property
    def prompt(self) -> str | None:
        """The final prompt; None where the strategy's prompt needs a call first (self-prompting)."""
        return self.strategy.planned_prompt(self.task, self.experiment.prompt_variant, self.texts)

    @cached_property
    def prompt_sha(self) -> str | None:
        """sha256 of :attr:`prompt`, computed once (a 200 KB prompt takes a millisecond)."""
        return None if self.prompt is None else prompts.prompt_hash(self.prompt)

    @property
    def gold(self) -> str:
        return self.experiment.majority_label


def instance_set(pool: Pool, majority_label: str, n: int, p: float, seed: int) -> tuple[list[int], list[int]]:
    """(X_maj, X_min) of App. C.3 for one majority label, as positions in the pool."""
    minority_label = next(label for label in pool.labels if label != majority_label)
    try:
        return select(pool.positions(majority_label), pool.positions(minority_label), n, p, seed)
    except ValueError as e:
        where = f" (the pool filtered by {', '.join(pool.meta.filter_models)})" if pool.meta.filtered else ""
        hint = ("; pass use_filtered=false to draw from the unfiltered pool, or filter a larger one"
                if pool.meta.filtered else "")
        raise ValueError(f"Task {pool.task!r}{where}, majority {majority_label!r}: {e}{hint}") from None


def plan_job(cfg: Config, pools: dict[str, Pool], strategy: Strategy) -> list[Planned]:
    """Every experiment of one job, each once, in a fixed order, under the job's strategy
    (:func:`mip.strategies.build` builds it from ``cfg``)."""
    pattern_of(cfg.pattern.name)  # an unknown pattern fails here, naming the registered ones
    settings = answer_settings(cfg)
    plans: dict[str, Planned] = {}
    repeated = 0
    for task in cfg.task.values():
        pool = pools[task.name]
        task_keyed = encode_settings({**settings, "task": task_settings(task)})
        for majority_label in task.labels:
            chosen = instance_set(pool, majority_label, cfg.n, cfg.p, cfg.seed)
            majority, minority = (np.asarray(x, dtype=np.intp) for x in chosen)
            shuffles = cfg.shuffle_seeds if structured(cfg.pattern.name) and cfg.shuffle_seeds else [None]
            orders = order_seeds_for(cfg.pattern.name, cfg.order_seeds)
            for order_seed, shuffle_seed in ((o, s) for o in orders for s in shuffles):
                experiment = Experiment(
                    model=cfg.model.name,
                    task=task.name,
                    n=cfg.n,
                    p=cfg.p,
                    majority_label=majority_label,
                    seed=cfg.seed,
                    pattern=cfg.pattern.name,
                    order_seed=order_seed,
                    shuffle_seed=shuffle_seed,
                    prompt_variant=cfg.prompt_variant.name,
                    budget=cfg.budget.name,
                    strategy=cfg.strategy.name,
                )
                key = experiment_key(experiment, pool.version, task_keyed)
                if key in plans:  # a seed named twice (order_seeds=[0,0,1]): one experiment, run once
                    repeated += 1
                    continue
                arrangement = partial(arranged, majority, minority, cfg.pattern.name, order_seed, shuffle_seed)
                plans[key] = Planned(experiment, key, task, pool, arrangement, strategy)
    if repeated:
        print(f"{repeated} experiment(s) named more than once (a seed repeated in order_seeds or shuffle_seeds) run "
              "once each.", file=sys.stderr)
    return list(plans.values())


def _taken(encoded: JsonColumn | None, values: np.ndarray, positions: np.ndarray) -> Sequence[str]:
    """``values`` at ``positions``: as their JSON array where the pool keeps one (a record
    takes them without a Python string each, see :class:`mip.data.columns.JsonColumn`), else a list."""
    return encoded.take(positions) if encoded is not None else values[positions].tolist()


def arranged(majority: np.ndarray, minority: np.ndarray, pattern: str, order_seed: int | None,
             shuffle_seed: int | None) -> np.ndarray:
    """The instances of one experiment, as pool positions in prompt order (expanded orderings
    shuffle each label first)."""
    if shuffle_seed is not None:
        majority, minority = shuffle_within_labels(majority, minority, shuffle_seed)
    return np.concatenate((majority, minority))[arrangement(len(majority), len(minority), pattern, order_seed)]
