"""A dry run: what a job would send, counted before any call, by its strategy's own count
of each attempt (:meth:`mip.strategies.Strategy.sends`). No backend is built: no API key,
no vLLM, no GPU needed.

Per task it keeps the experiments to run, their prompt tokens and how many would overflow
the context window (input_overflow without a call: never sent, so in no cost), then two
counts of what is sent (App. D.1, §3.2):

- expected: one attempt per experiment, as the strategy sends it where every answer comes
  back whole (``calls``, ``sent_prompt_tokens``, ``max_output_tokens``: each call's output limit);
- ceiling: every attempt allowed (``max_attempts`` unless the model is deterministic; less the
  attempts a killed run paid for), each sending what the strategy may send at most (``ceiling_*``).

>>> summary = run_job(compose("model=gpt_oss_120b", "dry_run=true"), "results/runs/x")   # doctest: +SKIP
>>> summary.per_task["math"]["ceiling_calls"]   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mip.job.tokens import OfflineTokenizer, context_for, counted
from mip.experiment.keys import attempts_allowed
from mip.strategies import Sent

if TYPE_CHECKING:
    from mip.config import Config
    from mip.experiment.planning import Planned
    from mip.job.job_summary import JobSummary
    from mip.models import Backend
    from mip.experiment.records import Attempt
    from mip.strategies import Strategy

#: What a dry run counts per task (``JobSummary.per_task``).
COUNTS = ("experiments", "prompt_tokens", "overflowing", "calls", "sent_prompt_tokens", "max_output_tokens",
          "ceiling_calls", "ceiling_prompt_tokens", "ceiling_output_tokens")


def _add(counts: dict[str, int], prefix: str, sent: Sent, prompt_key: str, output_key: str) -> None:
    counts[f"{prefix}calls"] += sent.calls
    counts[prompt_key] += sent.prompt_tokens
    counts[output_key] += sent.output_tokens


def dry_run(cfg: Config, strategy: Strategy, todo: list[Planned], summary: JobSummary,
            counter: Backend | OfflineTokenizer, paid: Mapping[str, list[Attempt]] | None = None) -> None:
    """Count into ``summary`` what the job would send for ``todo`` (see the module's text);
    ``paid``: the attempts a killed run paid for, which the ceiling does not count again."""
    ctx = context_for(cfg, counter)
    allowed = attempts_allowed(cfg)
    summary.attempts_allowed = allowed
    for plan, n_tokens in counted(counter, todo, summary, cfg.model.chars_per_token):
        task = summary.per_task.setdefault(plan.experiment.task, dict.fromkeys(COUNTS, 0))
        task["experiments"] += 1
        task["prompt_tokens"] += n_tokens
        made = (paid or {}).get(plan.key, [])
        left = 0 if made and made[-1].verdict.valid else max(allowed - len(made), 0)  # the loop stores the rest
        if strategy.whole_prompt and ctx.overflows(n_tokens):
            task["overflowing"] += 1
            summary.overflow_prompt_tokens += n_tokens
        elif left:
            expected, at_most = strategy.sends(plan, n_tokens, ctx)
            _add(task, "", expected, "sent_prompt_tokens", "max_output_tokens")
            _add(task, "ceiling_", at_most * left, "ceiling_prompt_tokens", "ceiling_output_tokens")
        plan.release()
    summary.overflowing = sum(t["overflowing"] for t in summary.per_task.values())
    summary.max_output_tokens = sum(t["max_output_tokens"] for t in summary.per_task.values())
    summary.tokens_from = getattr(counter, "source", "") if not summary.tokens_estimated else \
        f"estimated from characters ({cfg.model.chars_per_token:g} per token" + (
            f"; the tokenizer {getattr(counter, 'wanted', None) or cfg.model.tokenizer} could not be loaded, see the "
            "warning above)"
            if getattr(counter, "fallback", None) else ")")
