"""Aggregation strategies: how one attempt of each experiment is made, and what it sends.

A strategy takes the experiments of one attempt round — lazily, as the backend has room —
and yields each attempt as it lands; the job loop (:mod:`mip.job.loop`) decides which
verdicts are final, keeps the attempts paid and stores the records. It sees only a
:class:`Context` (a ``generate``, token counts, the store's attempt log), never the job.
It also states what one attempt sends (:meth:`Strategy.sends`): dry runs, costs and
summaries count with it. Registered by name:

- ``single_call`` — the paper's setting: one request per attempt (:mod:`.single`);
- ``count_report`` — the same call, also asking for per-label counts (:mod:`.single`);
- ``decomposed`` — label batches, ask again for what is missing, count in code (:mod:`.decomposed`);
- self-prompting (App. B.2.3) — two calls per attempt: the model writes the instruction,
  then answers it (:mod:`.self_prompting`). The paper names it a prompt variant, so it is
  chosen as one (:data:`VARIANT_STRATEGIES`) and its records keep ``strategy=single_call``.

A new strategy is one module with a subclass of :class:`Strategy` (its ``attempts`` and
``sends``; its settings' schema as ``schema`` where it has settings), one entry in
:data:`STRATEGIES`, a ``conf/strategy/<name>.yaml`` and a test.

>>> from mip.config import StrategyConfig
>>> single = build(StrategyConfig("single_call"), "standard")
>>> type(single).__name__, type(build(StrategyConfig("single_call"), "self_prompt")).__name__
('SingleCall', 'SelfPrompting')
>>> build(StrategyConfig("decomposed"), "hint")
Traceback (most recent call last):
ValueError: The decomposed strategy asks with its own prompt; use it with prompt_variant=standard.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from mip.experiment import prompts
from mip.config import StrategyConfig
from mip.models import Completion, Request
from mip.experiment.records import Attempt, CallOutput, Stage
from mip.registry import load

if TYPE_CHECKING:
    from mip.config import TaskConfig
    from mip.experiment.planning import Planned


@dataclass
class Landed:
    """One attempt of one experiment, as it landed."""

    plan: Planned
    prompt_tokens: int
    attempt: Attempt
    predictions: list[str | None] | None = None
    """decomposed: the label given to each presented instance (None: missing)."""


@dataclass(frozen=True)
class Sent:
    """What calls send: how many, their prompt tokens, their output-token limits added up.

    >>> Sent(1, 100, 20) + Sent(2, 50, 40), Sent(1, 100, 20) * 3
    (Sent(calls=3, prompt_tokens=150, output_tokens=60), Sent(calls=3, prompt_tokens=300, output_tokens=60))
    """

    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Sent) -> Sent:
        return Sent(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                    self.output_tokens + other.output_tokens)

    def __mul__(self, times: int) -> Sent:
        return Sent(self.calls * times, self.prompt_tokens * times, self.output_tokens * times)


@dataclass
class Context:
    """What a strategy sees of its job, built by the job (:func:`mip.job.loop.context_for`)."""

    count: Callable[[list[str]], list[int]]
    """Prompt tokens of each text, as the job counts them (the model's tokenizer, else estimated)."""
    room: Callable[[int], int]
    """The output limit of a call whose prompt has that many tokens: the budget, never past
    what the context window leaves."""
    overflows: Callable[[int], bool]
    """Whether a prompt of that many tokens leaves no room in the context window (input_overflow)."""
    budget: int
    """The output-token budget of one call."""
    generate: Callable[[Iterable[Request]], Iterator[Completion]] = field(default=lambda requests: _no_calls())
    """Completions through the job's one retry wrapper (a dry run's context sends nothing)."""
    attempt_log: Mapping[str, Sequence[Attempt]] = field(default_factory=dict)
    """The attempts paid so far of each experiment, earlier runs' included (the store's log)."""
    forced_answer_ok: bool = False
    """A reserved answer budget (App. C.2) forces an answer after a length stop: parse it."""

    def request(self, id: str, prompt: str, prompt_tokens: int) -> Request:
        """The request for ``prompt``, with the job's output limit."""
        return Request(id, prompt, self.room(prompt_tokens))

    def next_index(self, key: str) -> int:
        """The index of an experiment's next attempt."""
        return len(self.attempt_log.get(key, ()))


def _no_calls() -> Iterator[Completion]:
    raise RuntimeError("A dry run sends nothing: Strategy.sends counts, Strategy.attempts calls.")


class Strategy(ABC):
    """How a job makes one attempt of each experiment, and what that attempt sends. Built
    once per job by :func:`build`, which refuses settings the strategy cannot run."""

    #: The schema of its settings (``conf/strategy/<name>.yaml`` extends ``/strategy_schema/<name>``).
    schema: ClassVar[type[StrategyConfig]] = StrategyConfig
    #: Whether an experiment's first request is known before any call (a batching backend
    #: can then generate it ahead, :mod:`mip.job.prefetch`).
    ahead: ClassVar[bool] = False
    #: Whether the strategy sends the planned prompt whole (for self-prompting, the
    #: instance block), so one past the context window is an input_overflow before any
    #: call; a strategy that splits the instances over calls checks its own prompts.
    whole_prompt: ClassVar[bool] = True
    #: Whether it asks with a prompt of its own: it then runs with ``prompt_variant=standard`` only.
    own_prompt: ClassVar[bool] = False

    def __init__(self, settings: StrategyConfig | None = None):
        self.settings = settings or self.schema()

    def check(self) -> None:
        """Raise a one-line ValueError for settings this strategy cannot run."""

    def planned_prompt(self, task: TaskConfig, variant: str, texts: list[str]) -> str | None:
        """The prompt a record's hash covers, built before any call: the prompt variant's
        (App. B); None where it needs a call first (self-prompting)."""
        return prompts.standard_prompt(task.prompt, task.labels, texts, variant)

    def final_prompt(self, plan: Planned, counted: Attempt | None) -> str:
        """The prompt a record's hash covers once its attempts are in: the planned one."""
        return plan.prompt or ""

    @abstractmethod
    def sends(self, plan: Planned, prompt_tokens: int, ctx: Context) -> tuple[Sent, Sent]:
        """What one attempt of ``plan`` (prompt of ``prompt_tokens``) sends: as expected, where
        every answer comes back whole, and at most. A dry run counts with this."""

    @abstractmethod
    def attempts(self, ctx: Context, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        """One attempt for each experiment of ``live`` (pulled as requests go out), yielded
        as it lands. An experiment whose calls kept failing is not yielded: the loop leaves
        it unstored for a rerun."""


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

#: Prompt variants that are strategies (the paper names self-prompting a prompt variant,
#: App. B.2.3): chosen with ``prompt_variant=<name>``, they run in place of ``single_call``.
VARIANT_STRATEGIES: dict[str, str] = {
    "self_prompt": "mip.strategies.self_prompting:SelfPrompting",
}


def strategy_class(name: str) -> type[Strategy]:
    """The class registered as ``name``."""
    return load(STRATEGIES, name, "strategy")


def schemas() -> dict[str, type[StrategyConfig]]:
    """Each strategy's settings schema, by name (stored as ``strategy_schema/<name>``)."""
    return {name: strategy_class(name).schema for name in STRATEGIES}


def variants() -> tuple[str, ...]:
    """Every prompt variant (App. B): the templated ones, then those that are strategies."""
    return (*prompts.TEMPLATED, *VARIANT_STRATEGIES)


def build(settings: StrategyConfig, variant: str) -> Strategy:
    """The strategy of a job with these settings and prompt variant, or a one-line
    ValueError saying why they cannot run."""
    if variant not in variants():
        raise ValueError(f"Unknown prompt variant {variant!r}; choose one of {', '.join(variants())}.")
    kind = strategy_class(settings.name)
    if variant in VARIANT_STRATEGIES:
        if settings.name != StrategyConfig.name:
            raise ValueError(f"The {settings.name} strategy has its own prompt; use it with prompt_variant=standard.")
        kind = load(VARIANT_STRATEGIES, variant, "prompt variant")
    elif kind.own_prompt and variant != "standard":
        raise ValueError(f"The {settings.name} strategy asks with its own prompt; use it with "
                         "prompt_variant=standard.")
    if not isinstance(settings, kind.schema):
        settings = kind.schema(**{k: v for k, v in vars(settings).items() if k in kind.schema.__dataclass_fields__})
    strategy = kind(settings)
    strategy.check()
    return strategy
