"""The decomposed strategy (beyond the paper): the model labels batches of instances, the
instances missing from its answers are asked again (``max_reasks`` rounds), and code
counts the labels and decides the majority (a tie is -1).

All of an experiment's calls make one attempt: at n = 2,000 with ``batch_size=50``, 40
calls where every answer is whole, up to 120 with two rounds of asking again. Each call's
output limit is the budget; an experiment with a batch whose calls kept failing is not
yielded, so it stays unstored like any infrastructure failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mip.experiment import prompts, scoring
from mip.config import StrategyConfig
from mip.models import Request
from mip.experiment.records import Attempt, Stage
from mip.strategies import Context, Landed, Sent, Strategy, stage_of

if TYPE_CHECKING:
    from mip.config import TaskConfig
    from mip.experiment.planning import Planned

BATCH_SEPARATOR = "\n\n=====\n\n"
"""Between the first round's batch prompts in the prompt a record's hash covers."""


@dataclass
class DecomposedConfig(StrategyConfig):
    """The decomposed strategy's settings (``conf/strategy/decomposed.yaml``)."""

    name: str = "decomposed"
    batch_size: int = 50
    """Instances labelled per call (1: one call per instance)."""
    max_reasks: int = 2
    """Rounds that ask again for instances missing from the answers."""


def batch_prompts(task: TaskConfig, texts: list[str], positions: Sequence[int], batch_size: int) -> list[str]:
    """Batch prompts over the given 0-based positions, ``batch_size`` instances each."""
    positions = list(positions)
    return [prompts.batch_prompt(task.prompt, task.labels, [(i + 1, texts[i]) for i in positions[j:j + batch_size]])
            for j in range(0, len(positions), batch_size)]


class Decomposed(Strategy):
    schema = DecomposedConfig
    whole_prompt = False  # it sends batches of the instances, never the whole prompt
    own_prompt = True
    settings: DecomposedConfig

    def check(self) -> None:
        if self.settings.batch_size < 1 or self.settings.max_reasks < 0:
            raise ValueError("The decomposed strategy needs strategy.batch_size >= 1 and strategy.max_reasks >= 0.")

    def planned_prompt(self, task: TaskConfig, variant: str, texts: list[str]) -> str | None:
        """The first round's batch prompts, joined."""
        return BATCH_SEPARATOR.join(batch_prompts(task, texts, range(len(texts)), self.settings.batch_size))

    def _batches(self, ctx: Context, plan: Planned, missing: list[int], round_: int) -> list[tuple[Request, int]]:
        """One round's requests for an experiment (its missing instances in batches), with
        their prompt tokens."""
        texts = batch_prompts(plan.task, plan.texts, missing, self.settings.batch_size)
        return [(ctx.request(f"{plan.key}#{round_}.{j}", text, tokens), tokens)
                for j, (text, tokens) in enumerate(zip(texts, ctx.count(texts)))]

    def sends(self, plan: Planned, prompt_tokens: int, ctx: Context) -> tuple[Sent, Sent]:
        """Where every answer is whole, the first round's batches; at most, every round asks
        again for all of them (a round asks only what is missing: never more batches, nor longer
        prompts), each call up to the whole budget."""
        first = self._batches(ctx, plan, list(range(len(plan.positions))), 0)
        expected = Sent(len(first), sum(n for _, n in first), sum(r.max_tokens for r, _ in first))
        rounds = 1 + self.settings.max_reasks
        calls = expected.calls * rounds
        return expected, Sent(calls, expected.prompt_tokens * rounds, calls * ctx.budget)

    def attempts(self, ctx: Context, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        live = list(live)
        k = self.settings.batch_size
        predictions: dict[str, list[str | None]] = {p.key: [None] * len(p.positions) for p, _ in live}
        stages: dict[str, list[Stage]] = {p.key: [] for p, _ in live}
        failed: set[str] = set()
        for round_ in range(1 + self.settings.max_reasks):
            batches: dict[str, tuple[Planned, list[int], Request]] = {}
            for plan, _ in live:
                if plan.key in failed:
                    continue
                missing = [i for i, x in enumerate(predictions[plan.key]) if x is None]
                for j, (request, _) in enumerate(self._batches(ctx, plan, missing, round_)):
                    batches[request.id] = (plan, missing[j * k:(j + 1) * k], request)
            if not batches:
                break
            answered: set[str] = set()
            for completion in ctx.generate(r for _, _, r in batches.values()):
                plan, positions, request = batches[completion.id]
                answered.add(completion.id)
                stages[plan.key].append(stage_of(f"batch {completion.id.split('#')[1]}", request, completion))
                found = scoring.parse_labels(completion.output, plan.task.labels, [i + 1 for i in positions])
                for index, label in found.items():
                    predictions[plan.key][index - 1] = label
            failed |= {rid.split("#")[0] for rid in batches if rid not in answered}
        for plan, n_tokens in live:
            if plan.key in failed:
                continue
            given = predictions[plan.key]
            answer = scoring.majority_of(given, plan.task.labels) if any(given) else None
            # Counted in code from the batches' labels: no length stop of its own to judge.
            verdict, kind = scoring.verdict_of(answer, plan.gold, finish_reason=None)
            attempt = Attempt(index=ctx.next_index(plan.key), stages=stages[plan.key], answer=answer, verdict=verdict,
                              invalid_kind=kind)
            yield Landed(plan, n_tokens, attempt, predictions=given)
