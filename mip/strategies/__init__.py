"""Aggregation strategies: how one attempt of each experiment is made.

A strategy takes the experiments of one attempt round — lazily, as the backend has room —
and yields each attempt as it lands; the job loop (:mod:`mip.job.loop`) decides which
verdicts are final, keeps the attempts paid and stores the records. Registered by name:

- ``single_call`` — the paper's setting: one request per attempt (:mod:`.single`);
- ``count_report`` — the same call, also asking for per-label counts (:mod:`.single`);
- ``decomposed`` — label batches, ask again for what is missing, count in code (:mod:`.decomposed`);
- self-prompting (App. B.2.3) — the ``self_prompt`` prompt variant, whose attempt is two
  stages: the model writes the instruction, then answers it (:mod:`.self_prompting`).

A new strategy is one module with a subclass of :class:`Strategy` (its ``attempts``, and
what it changes of the class attributes and methods below), one entry in
:data:`STRATEGIES`, a ``conf/strategy/<name>.yaml`` and a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from mip import prompts
from mip.models import Completion, Request
from mip.records import Attempt, CallOutput, Stage
from mip.registry import load

if TYPE_CHECKING:
    from mip.config import Config, StrategyConfig, TaskConfig
    from mip.experiments import Planned
    from mip.job.loop import JobLoop


@dataclass
class Landed:
    """One attempt of one experiment, as it landed."""

    plan: Planned
    prompt_tokens: int
    attempt: Attempt
    predictions: list[str | None] | None = None
    """decomposed: the label given to each presented instance (None: missing)."""


class Strategy:
    """How a job makes one attempt of each experiment. Built once per job with
    :meth:`from_config`, which refuses settings the strategy cannot run."""

    #: Whether an experiment's first request is known before any call (a batching backend
    #: can then generate it ahead, :mod:`mip.job.prefetch`).
    ahead: ClassVar[bool] = False
    #: Whether the strategy sends the planned prompt whole (for self-prompting, the
    #: instance block), so one past the context window is an input_overflow before any
    #: call; a strategy that splits the instances over calls checks its own prompts.
    whole_prompt: ClassVar[bool] = True
    #: Whether it asks with a prompt of its own: it then runs with ``prompt_variant=standard`` only.
    own_prompt: ClassVar[bool] = False

    @classmethod
    def from_config(cls, cfg: Config) -> Strategy:
        return cls()

    @classmethod
    def planned_prompt(cls, task: TaskConfig, variant: str, texts: list[str], settings: StrategyConfig) -> str | None:
        """The prompt a record's hash covers when the strategy has its own (None: the
        prompt variant's, :func:`mip.experiments.build_prompt`)."""
        return None

    def attempts(self, job: JobLoop, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        """One attempt for each experiment of ``live`` (pulled as requests go out), yielded
        as it lands. An experiment whose calls kept failing is not yielded: the loop leaves
        it unstored for a rerun."""
        raise NotImplementedError


def stage_of(name: str, request: Request, c: Completion, keep_prompt: bool = False,
             prompt_sha: str | None = None) -> Stage:
    """One model call inside an attempt, as a record keeps it: what the call returned, its
    request's output-token limit, and its prompt's hash (the prompt too where asked)."""
    returned = {field: getattr(c, field) for field in CallOutput.model_fields}
    # The backend's limit where it sent a smaller one (a context refusal showed what fits).
    return Stage(**{**returned, "max_tokens": c.max_tokens or request.max_tokens}, name=name,
                 prompt=request.prompt if keep_prompt else None,
                 prompt_hash=prompt_sha or prompts.prompt_hash(request.prompt))


#: Strategy registry: ``strategy.name`` → ``module:Class``, imported when a job uses it.
STRATEGIES: dict[str, str] = {
    "single_call": "mip.strategies.single:SingleCall",
    "count_report": "mip.strategies.single:CountReport",
    "decomposed": "mip.strategies.decomposed:Decomposed",
}


def strategy_class(name: str) -> type[Strategy]:
    """The class registered as ``name``."""
    return load(STRATEGIES, name, "strategy")


def strategy_for(cfg: Config) -> Strategy:
    """The strategy of a job (self-prompting's two stages replace the single call), or a
    ValueError saying why these settings cannot run."""
    kind = strategy_class(cfg.strategy.name)
    if kind.own_prompt and cfg.prompt_variant.name != "standard":
        raise ValueError(f"The {cfg.strategy.name} strategy asks with its own prompt; use it with "
                         "prompt_variant=standard.")
    if cfg.prompt_variant.name == "self_prompt":
        if cfg.strategy.name != "single_call":
            raise ValueError(f"The {cfg.strategy.name} strategy has its own prompt; use it with prompt_variant=standard.")
        from mip.strategies.self_prompting import SelfPrompting

        return SelfPrompting.from_config(cfg)
    return kind.from_config(cfg)
