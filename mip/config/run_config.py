"""The schema of run.py's primary config (``conf/config.yaml``): the model, the tasks, one
pattern, budget, prompt variant and strategy, and the setting (n, p, seeds) of one job.

    python run.py --cfg job             # print the composed config

>>> PathsConfig().store_dir, Config.__dataclass_fields__["dry_run"].metadata["why"]
('results/store', 'no call is made')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING

from mip.config import shaping

from mip.config.model import ModelConfig
from mip.config.task import TaskConfig


@dataclass
class PatternConfig:
    name: str = MISSING


@dataclass
class BudgetConfig:
    name: str = MISSING
    max_tokens: int = MISSING
    """Maximum output tokens, reasoning included (§3.2)."""
    stated_tokens: Optional[int] = shaping.setting(
        None, why="the limit the budget's name stands for; max_tokens is the one sent")
    """The limit the name stands for (``conf/budget/smoke.yaml``: 320; ``max_tokens`` is set from
    it): ``budget.max_tokens=999`` leaves it, so the analysis labels those records ``999 tokens``,
    never ``smoke`` (:func:`mip.config.budgets.labels`)."""


@dataclass
class PromptVariantConfig:
    name: str = MISSING
    """A prompt variant of App. B (mip.strategies.variants)."""


@dataclass
class StrategyConfig:
    """How the model aggregates (beyond the paper): single_call is the paper's setting. A
    strategy with settings extends this schema in its module (``schema`` of its class, stored
    as ``strategy_schema/<name>``; e.g. :class:`mip.strategies.decomposed.DecomposedConfig`)."""

    name: str = "single_call"
    """single_call | count_report | decomposed (mip.strategies.STRATEGIES)."""


@dataclass
class LoggerConfig:
    name: str = "none"
    """none | wandb."""
    project: str = "mip"
    entity: Optional[str] = None
    group: Optional[str] = None
    """W&B group; null: the sweep (or run) folder under the results folder, ``sweeps/<day>/<time>-<token>``
    (set by run.py, mip.tracking.wandb_run.run_group)."""
    mode: Optional[str] = None
    """online | offline | disabled; null: WANDB_MODE where set, else online when logged in (WANDB_API_KEY,
    or a key `wandb login` saved), else offline (mip.tracking.tracker.wandb_mode)."""
    tags: list[str] = field(default_factory=list)


@dataclass
class PathsConfig:
    results_dir: str = "results"
    store_dir: str = "results/store"
    cache_dir: str = "~/.cache/mip"
    filter_dir: str = "results/filter"
    """Filter results (one file per model and instance) and Table 4."""


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    """The chosen ``conf/model/<name>.yaml``, typed by its backend's schema (a subclass of
    :class:`ModelConfig`; see :mod:`mip.config.model`)."""
    task: dict[str, TaskConfig] = field(default_factory=dict)
    pattern: PatternConfig = field(default_factory=PatternConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    prompt_variant: PromptVariantConfig = field(default_factory=PromptVariantConfig)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    setting: str = shaping.setting("core", why="a preset's label; its n, p and seeds are in the experiment")
    n: int = 2000
    p: float = 0.55
    seed: int = 0
    """Selection seed s."""
    order_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Order seeds of the random pattern."""
    shuffle_seeds: list[int] = field(default_factory=list)
    """Expanded orderings (§5.2.1): for structured patterns, shuffle X_maj and X_min independently
    under each of these seeds, then arrange; empty runs the pattern once on the selection order."""
    max_attempts: int = 3
    infra_retries: int = shaping.setting(3, why="retries of failed calls (infrastructure, never a verdict)")
    """Rounds of retries, with backoff, for calls that failed for infrastructure reasons and that
    the backend did not retry itself (a crash of the backend; backends without per-request
    retries), before the experiment is left unstored for a rerun."""
    data_dir: Optional[str] = shaping.setting(
        None, why="where the source files are; the pool version hashes their content")
    """Read local files laid out as shared/data/raw instead of the hub."""
    use_filtered: bool = shaping.setting(True, why="which pool; the pool version is keyed")
    """Use a task's filtered pool (App. C.1) when filter.py has built one; false: the unfiltered pool."""
    task_source: list[str] = shaping.setting(
        factory=list, why="where the tasks' shipped files are, which a record's task changes are read against")
    """The config folders the tasks were composed from: a record's ``config.task`` holds what its
    task changes from its file there (``task/<name>.yaml``, :mod:`mip.job.task_changes`). Set by
    run.py from Hydra's config sources and by :func:`mip.entry.config_store.compose_conf`; empty
    in a config built in Python, whose records then hold every prompt field of their task."""
    dry_run: bool = shaping.setting(False, why="no call is made")
    preflight: str = shaping.setting(
        "off", why="whether a one-request check runs (or is required) before a sweep; it sends no experiment")
    """off | only (one request per model and body of the command, reported and kept under
    results/preflight/; no job runs) | required (refuse, exit 2, unless a passing preflight of
    each model's body is on file); see mip.tools.preflight."""
    preflight_max_age_days: float = shaping.setting(7.0, why="which stored preflight is trusted; it sends nothing")
    """A stored preflight older than this many days is not used (by preflight=required, or for a
    dry run's measured price and characters a token); run preflight=only again."""
    max_cost: Optional[float] = shaping.setting(None, why="a cap on what a sweep may cost, in USD; no answer changes")
    """USD a sweep (or a single run) may cost at most: a sweep expected to cost more (the dry run's
    expected cost, at the model's prices) is refused before any request, and one whose
    provider-reported spend (``usage.cost``) reaches it stops (mip/entry/spend_gate.py)."""
    confirm_cost_above: float = shaping.setting(20.0, why="when a sweep asks before it spends")
    """A sweep expected to cost more than this (USD) without ``max_cost`` asks for confirmation on a
    terminal, and off one is refused unless ``yes=true``."""
    yes: bool = shaping.setting(False, why="answers yes to the cost confirmation")
    key_concurrency: Optional[int] = shaping.setting(None, why="how many requests a sweep sends at once")
    """Requests in flight at most on one model's key across a sweep's jobs that run side by side
    (jobs at once × model.max_concurrency; a dry run says it): a SLURM array runs fewer jobs at
    once to fit (mip/entry/sweep_limits.py)."""
    progress: bool = shaping.setting(True, why="a progress bar")
    progress_interval_s: float = shaping.setting(30.0, why="how often progress is said")
    """Off a terminal, a progress line at most this often; while requests are in flight, at least
    this often (how many, the oldest's wait, experiments done and ETA: mip/tracking/in_flight.py)."""
    stop_grace_s: float = shaping.setting(20.0, why="how long a stopping job waits for replies in flight")
    """On SIGTERM, SIGINT or submitit's preemption signal, how long a job waits for the replies in
    flight before it stops (mip/job/stop.py); inside SLURM's KillWait (30 s by default)."""
