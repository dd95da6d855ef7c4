"""Self-prompting (App. B.2.3): an attempt is two calls. The model first writes the
instruction for the task (stage one, its prompt kept in the record since it is not
rebuildable from the pool alone), then answers the instances under that instruction.
The paper names it a prompt variant: ``prompt_variant=self_prompt`` chooses it
(:data:`mip.strategies.VARIANT_STRATEGIES`).

A truncated or empty instruction ends the attempt as invalid (truncated / parse); a
stage-two prompt past the context window ends it as ``input_overflow``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from mip.experiment import prompts, scoring
from mip.experiment.records import Attempt, Stage
from mip.experiment.scoring import InvalidKind, Verdict
from mip.strategies import Context, Landed, Sent, Strategy, stage_of

if TYPE_CHECKING:
    from mip.config import TaskConfig
    from mip.experiment.planning import Planned


class SelfPrompting(Strategy):
    """Stage one writes the instruction, stage two answers under it; the planned prompt is
    the instance block alone, checked against the context window before any call."""

    def planned_prompt(self, task: TaskConfig, variant: str, texts: list[str]) -> str | None:
        return None  # stage two's prompt holds stage one's output

    def final_prompt(self, plan: Planned, counted: Attempt | None) -> str:
        """Stage two's prompt, or stage one's when stage two was never sent; before any call
        (input overflow) the instance block alone."""
        stages = counted.stages if counted else []
        instruction = next((s for s in stages if s.name == "instruction"), None)
        if instruction is None:
            return prompts.instance_block(plan.texts)
        if not any(s.name == "answer" for s in stages):
            return instruction.prompt or ""
        return prompts.self_prompt(instruction.output or "", plan.texts)

    def sends(self, plan: Planned, prompt_tokens: int, ctx: Context) -> tuple[Sent, Sent]:
        """Two calls: the request for the instruction, then the instances under it. Before
        stage one the instruction is unknown: the expected count holds the instances alone,
        the ceiling adds an instruction as long as stage one may write."""
        meta = prompts.meta_prompt(plan.task.prompt, len(plan.positions))
        (meta_tokens,) = ctx.count([meta])
        instruction = ctx.room(meta_tokens)  # stage one's output limit: the instruction's length at most
        expected = Sent(2, meta_tokens + prompt_tokens, instruction + ctx.room(prompt_tokens))
        return expected, Sent(2, expected.prompt_tokens + instruction, expected.output_tokens)

    def attempts(self, ctx: Context, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        live = list(live)  # every experiment takes part in stage one, also those it ends
        metas = [prompts.meta_prompt(p.task.prompt, len(p.positions)) for p, _ in live]
        requests = [ctx.request(p.key, m, t) for (p, _), m, t in zip(live, metas, ctx.count(metas))]
        by_key = {p.key: (p, n, r) for (p, n), r in zip(live, requests)}
        ready: list[tuple[Planned, Stage, str]] = []
        for completion in ctx.generate(requests):
            plan, n_tokens, request = by_key[completion.id]
            stage = stage_of("instruction", request, completion, keep_prompt=True)
            if completion.finish_reason == "length" or not (completion.output or "").strip():
                kind = InvalidKind.TRUNCATED if completion.finish_reason == "length" else InvalidKind.PARSE
                yield Landed(plan, n_tokens, Attempt(index=ctx.next_index(plan.key), stages=[stage],
                                                     verdict=Verdict.INVALID, invalid_kind=kind))
            else:
                ready.append((plan, stage, prompts.self_prompt(completion.output, plan.texts)))
        second: dict[str, tuple[Planned, Stage, int]] = {}
        requests = []
        for (plan, stage, prompt), n_tokens in zip(ready, ctx.count([prompt for *_, prompt in ready])):
            if ctx.overflows(n_tokens):
                yield Landed(plan, n_tokens, Attempt(index=ctx.next_index(plan.key), stages=[stage],
                                                     verdict=Verdict.INVALID, invalid_kind=InvalidKind.INPUT_OVERFLOW))
            else:
                second[plan.key] = (plan, stage, n_tokens)
                requests.append(ctx.request(plan.key, prompt, n_tokens))
        asked = {r.id: r for r in requests}
        for completion in ctx.generate(requests):
            plan, stage, n_tokens = second[completion.id]
            answer = scoring.parse_answer(completion.output, plan.task.labels)
            verdict, kind = scoring.verdict_of(answer, plan.gold, completion.finish_reason, ctx.forced_answer_ok)
            stages = [stage, stage_of("answer", asked[completion.id], completion)]
            yield Landed(plan, n_tokens, Attempt(index=ctx.next_index(plan.key), stages=stages, answer=answer,
                                                 verdict=verdict, invalid_kind=kind))
