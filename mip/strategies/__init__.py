"""Aggregation strategies: how one attempt of each experiment is made.

A strategy takes the experiments of one attempt round — lazily, as the backend has room —
and yields each attempt as it lands; the job loop (:mod:`mip.job.loop`) decides which
verdicts are final, keeps the attempts paid and stores the records. Registered by name:

- ``single_call`` — the paper's setting: one request per attempt (:mod:`.single`);
- ``count_report`` — the same call, also asking for per-label counts (:mod:`.single`);
- ``decomposed`` — label batches, ask again for what is missing, count in code (:mod:`.decomposed`);
- self-prompting (App. B.2.3) — the ``self_prompt`` prompt variant, whose attempt is two
  stages: the model writes the instruction, then answers it (:mod:`.self_prompting`).

A new strategy is one module with a class that has ``attempts(job, live)``, one entry in
:data:`STRATEGIES`, a ``conf/strategy/<name>.yaml`` and a test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mip import prompts
from mip.models import Completion, Request
from mip.records import Attempt, CallOutput, Stage

if TYPE_CHECKING:
    from mip.config import Config
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


class Strategy(Protocol):
    ahead: bool
    """Whether an experiment's first request is known before any call (a batching backend
    can then generate it ahead, :mod:`mip.job.prefetch`)."""

    def attempts(self, job: JobLoop, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        """One attempt for each experiment of ``live`` (pulled as requests go out), yielded
        as it lands. An experiment whose calls kept failing is not yielded: the loop leaves
        it unstored for a rerun."""


def stage_of(name: str, request: Request, c: Completion, keep_prompt: bool = False,
             prompt_sha: str | None = None) -> Stage:
    """One model call inside an attempt, as a record keeps it: what the call returned, its
    request's output-token limit, and its prompt's hash (the prompt too where asked)."""
    returned = {field: getattr(c, field) for field in CallOutput.model_fields}
    return Stage(**{**returned, "max_tokens": request.max_tokens}, name=name,
                 prompt=request.prompt if keep_prompt else None,
                 prompt_hash=prompt_sha or prompts.prompt_hash(request.prompt))


def _single(cfg: Config) -> Strategy:
    from mip.strategies.single import SingleCall

    return SingleCall(counts=cfg.strategy.name == "count_report")


def _decomposed(cfg: Config) -> Strategy:
    from mip.strategies.decomposed import Decomposed

    return Decomposed(cfg.strategy.batch_size, cfg.strategy.max_reasks)


STRATEGIES: dict[str, Callable[[Config], Strategy]] = {
    "single_call": _single,
    "count_report": _single,
    "decomposed": _decomposed,
}
#: Strategies that make all their calls inside one attempt (their re-asks are their own).
ONE_ATTEMPT = frozenset({"decomposed"})


def strategy_for(cfg: Config) -> Strategy:
    """The strategy of a job; self-prompting's two stages replace the single call."""
    if cfg.prompt_variant.name == "self_prompt":
        from mip.strategies.self_prompting import SelfPrompting

        return SelfPrompting()
    return STRATEGIES[cfg.strategy.name](cfg)
