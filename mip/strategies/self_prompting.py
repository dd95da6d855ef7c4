"""Self-prompting (App. B.2.3): an attempt is two stages. The model first writes the
instruction for the task (stage one, its prompt kept in the record since it is not
rebuildable from the pool alone), then answers the instances under that instruction.

A truncated or empty instruction ends the attempt as invalid (truncated / parse); a
stage-two prompt past the context window ends it as ``input_overflow``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from mip import prompts, scoring
from mip.scoring import InvalidKind, Verdict
from mip.experiments import build_prompt
from mip.job.tokens import count_texts, overflows
from mip.records import Attempt, Stage
from mip.strategies import Landed, Strategy, stage_of

if TYPE_CHECKING:
    from mip.experiments import Planned
    from mip.job.loop import JobLoop


class SelfPrompting(Strategy):
    """Stage one writes the instruction, stage two answers under it; the planned prompt is
    the instance block alone, checked against the context window before any call."""

    def attempts(self, job: JobLoop, live: Iterable[tuple[Planned, int]]) -> Iterator[Landed]:
        live = list(live)  # every experiment takes part in stage one, also those it ends
        per_token = job.cfg.model.chars_per_token
        metas = [prompts.meta_prompt(p.task.prompt, len(p.positions)) for p, _ in live]
        meta_tokens, _ = count_texts(job.backend, metas, per_token, quiet=True)
        requests = [job.request(p.key, m, t) for (p, _), m, t in zip(live, metas, meta_tokens)]
        by_key = {p.key: (p, n, r) for (p, n), r in zip(live, requests)}
        ready: list[tuple[Planned, Stage, str]] = []
        for completion in job.calls(requests):
            plan, n_tokens, request = by_key[completion.id]
            stage = stage_of("instruction", request, completion, keep_prompt=True)
            if completion.finish_reason == "length" or not (completion.output or "").strip():
                kind = InvalidKind.TRUNCATED if completion.finish_reason == "length" else InvalidKind.PARSE
                yield Landed(plan, n_tokens, Attempt(index=job.next_index(plan.key), stages=[stage],
                                                     verdict=Verdict.INVALID, invalid_kind=kind))
            else:
                ready.append((plan, stage, build_prompt(plan.task, "self_prompt", plan.texts, completion.output)))
        tokens, _ = count_texts(job.backend, [prompt for *_, prompt in ready], per_token, quiet=True)
        second: dict[str, tuple[Planned, Stage, int]] = {}
        requests = []
        for (plan, stage, prompt), n_tokens in zip(ready, tokens):
            if overflows(n_tokens, job.cfg.model.context_window):
                yield Landed(plan, n_tokens, Attempt(index=job.next_index(plan.key), stages=[stage],
                                                     verdict=Verdict.INVALID, invalid_kind=InvalidKind.INPUT_OVERFLOW))
            else:
                second[plan.key] = (plan, stage, n_tokens)
                requests.append(job.request(plan.key, prompt, n_tokens))
        asked = {r.id: r for r in requests}
        for completion in job.calls(requests):
            plan, stage, n_tokens = second[completion.id]
            answer = scoring.parse_answer(completion.output, plan.task.labels)
            verdict, kind = scoring.verdict_of(answer, plan.gold, completion.finish_reason, job.forced_answer_ok)
            stages = [stage, stage_of("answer", asked[completion.id], completion)]
            yield Landed(plan, n_tokens, Attempt(index=job.next_index(plan.key), stages=stages, answer=answer,
                                                 verdict=verdict, invalid_kind=kind))
