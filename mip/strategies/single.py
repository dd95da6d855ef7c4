"""One request per attempt: the paper's setting (``single_call``) and ``count_report``,
whose prompt also asks for per-label counts (they are parsed and kept beside the answer).

What an attempt sends, as a dry run counts it: one call, whose output limit is the budget
where the context window leaves room for it (here 4,096 tokens, a budget of 2,000):

>>> from mip.config import StrategyConfig
>>> from mip.strategies import Context, build
>>> ctx = Context(count=lambda texts: [len(t) // 4 for t in texts], room=lambda n: min(2000, 4096 - n),
...               overflows=lambda n: n >= 4096, budget=2000)
>>> build(StrategyConfig("single_call"), "standard").sends(None, 3000, ctx)[0]
Sent(calls=1, prompt_tokens=3000, output_tokens=1096)
>>> type(build(StrategyConfig("count_report"), "standard")).counts
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from mip.experiment import prompts, scoring
from mip.models import Request
from mip.experiment.records import Attempt
from mip.strategies import Context, Landed, Sent, Strategy, stage_of

if TYPE_CHECKING:
    from mip.config import TaskConfig
    from mip.experiment.planning import Planned


class SingleCall(Strategy):
    ahead = True  # one request per attempt, known before any call
    counts = False
    """Whether the prompt asks for per-label counts (parsed and kept beside the answer)."""

    def sends(self, plan: Planned, prompt_tokens: int, ctx: Context) -> tuple[Sent, Sent]:
        """One call with the planned prompt, whatever comes back."""
        one = Sent(1, prompt_tokens, ctx.room(prompt_tokens))
        return one, one

    def attempts(self, ctx: Context, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        asked: dict[str, tuple[Planned, int, Request]] = {}  # until the completion is in

        def requests() -> Iterator[Request]:  # built as the backend has room
            for plan, n_tokens in live:
                request = ctx.request(plan.key, plan.prompt, n_tokens)
                asked[plan.key] = (plan, n_tokens, request)
                yield request

        for completion in ctx.generate(requests()):
            plan, n_tokens, request = asked.pop(completion.id)
            labels = plan.task.labels
            answer = scoring.parse_answer(completion.output, labels)
            verdict, kind = scoring.verdict_of(answer, plan.gold, completion.finish_reason, ctx.forced_answer_ok)
            attempt = Attempt(index=ctx.next_index(plan.key),
                              stages=[stage_of("answer", request, completion, prompt_sha=plan.prompt_sha)],
                              answer=answer, verdict=verdict, invalid_kind=kind,
                              counts=scoring.parse_counts(completion.output, labels) if self.counts else None)
            yield Landed(plan, n_tokens, attempt)


class CountReport(SingleCall):
    """The single call whose prompt also asks for the count of each label."""

    counts = True

    def planned_prompt(self, task: TaskConfig, variant: str, texts: list[str]) -> str | None:
        return prompts.standard_prompt(task.prompt, task.labels, texts, variant, report_counts=True)
