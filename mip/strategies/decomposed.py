"""The decomposed strategy (beyond the paper): the model labels batches of instances, the
instances missing from its answers are asked again (``max_reasks`` rounds), and code
counts the labels and decides the majority (a tie is -1).

All of an experiment's calls make one attempt. Each call's output limit is the budget; an
experiment with a batch whose calls kept failing is not yielded, so it stays unstored
like any infrastructure failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from mip import prompts, scoring
from mip.job.tokens import estimate_tokens
from mip.models import Request
from mip.records import Attempt, Stage
from mip.strategies import Landed, Strategy, stage_of

if TYPE_CHECKING:
    from mip.config import Config, StrategyConfig, TaskConfig
    from mip.experiments import Planned
    from mip.job.loop import JobLoop

BATCH_SEPARATOR = "\n\n=====\n\n"
"""Between the first round's batch prompts in the prompt a record's hash covers."""


def batch_prompts(task: TaskConfig, texts: list[str], positions, batch_size: int) -> list[str]:
    """Batch prompts over the given 0-based positions, ``batch_size`` instances each."""
    positions = list(positions)
    return [prompts.batch_prompt(task.prompt, task.labels, [(i + 1, texts[i]) for i in positions[j:j + batch_size]])
            for j in range(0, len(positions), batch_size)]


class Decomposed(Strategy):
    whole_prompt = False  # it sends batches of the instances, never the whole prompt
    own_prompt = True

    def __init__(self, batch_size: int, max_reasks: int):
        self.batch_size, self.max_reasks = batch_size, max_reasks

    @classmethod
    def from_config(cls, cfg: Config) -> Decomposed:
        if cfg.strategy.batch_size < 1 or cfg.strategy.max_reasks < 0:
            raise ValueError("The decomposed strategy needs strategy.batch_size >= 1 and strategy.max_reasks >= 0.")
        return cls(cfg.strategy.batch_size, cfg.strategy.max_reasks)

    @classmethod
    def planned_prompt(cls, task: TaskConfig, variant: str, texts: list[str], settings: StrategyConfig) -> str | None:
        """The first round's batch prompts, joined."""
        return BATCH_SEPARATOR.join(batch_prompts(task, texts, range(len(texts)), settings.batch_size))

    def attempts(self, job: JobLoop, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        live = list(live)
        k = self.batch_size
        predictions: dict[str, list[str | None]] = {p.key: [None] * len(p.positions) for p, _ in live}
        stages: dict[str, list[Stage]] = {p.key: [] for p, _ in live}
        failed: set[str] = set()
        for round_ in range(1 + self.max_reasks):
            requests: list[Request] = []
            batches: dict[str, tuple[Planned, list[int], Request]] = {}
            for plan, _ in live:
                if plan.key in failed:
                    continue
                missing = [i for i, x in enumerate(predictions[plan.key]) if x is None]
                for j, prompt in enumerate(batch_prompts(plan.task, plan.texts, missing, k)):
                    tokens = estimate_tokens(prompt, job.cfg.model.chars_per_token)
                    request = job.request(f"{plan.key}#{round_}.{j}", prompt, tokens)
                    requests.append(request)
                    batches[request.id] = (plan, missing[j * k:(j + 1) * k], request)
            if not requests:
                break
            answered: set[str] = set()
            for completion in job.calls(requests):
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
            attempt = Attempt(index=job.next_index(plan.key), stages=stages[plan.key], answer=answer, verdict=verdict,
                              invalid_kind=kind)
            yield Landed(plan, n_tokens, attempt, predictions=given)
