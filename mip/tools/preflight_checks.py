"""What a preflight reply must show for the sweep to be the paper's experiment, beyond
an answer: a split budget bounded as App. C.2 has it, and reasoning from a model whose config
says its traces are full or summaries (§5.1). Each check returns why the preflight fails, or "".
Exercised by ``pytest tests/test_preflight.py -k "split or trace"``.

>>> REASONING_FIELDS
('reasoning', 'reasoning_content', 'reasoning_details')
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mip.config import Config
    from mip.tools.preflight import Preflight

REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_details")


def split_error(cfg: Config, found: Preflight) -> str:
    """A split budget (App. C.2: of the budget, ``answer_tokens`` for the answer and the rest for
    reasoning) holds only where the body matches the provider's rule for ``max_tokens``."""
    split = cfg.model.budget_split
    if split.answer_tokens is None:
        return ""
    budget, rule = cfg.budget.max_tokens, "model.budget_split.max_tokens_counts_reasoning"
    measured = found.max_tokens_counts_reasoning
    if measured == "undecided":
        return (f"the split budget cannot be checked: {found.counting}; until it is, output may reach twice the "
                f"{budget:,}-token budget")
    if measured == "no" and split.max_tokens_counts_reasoning:
        return (f"the provider does not count reasoning in max_tokens, so output can reach about "
                f"{budget + (found.reasoning_budget or 0):,} tokens, not the budget's {budget:,} (App. C.2): set "
                f"{rule}=false (max_tokens is then the {split.answer_tokens}-token answer budget) and run the "
                "preflight again")
    if measured == "yes" and not split.max_tokens_counts_reasoning:
        return (f"the provider counts reasoning in max_tokens, so a max_tokens of {split.answer_tokens} cuts the "
                f"reasoning there: set {rule}=true and run the preflight again")
    return ""


def trace_error(cfg: Config, found: Preflight) -> str:
    """A model whose config says its traces are full or summaries must return reasoning: the
    paper's trace analysis (§5.1) reads it."""
    if cfg.model.traces.value in ("full", "summary") and found.reasoning_in == ["none"]:
        return (f"the config says traces: {cfg.model.traces.value}, but no reasoning came back (none in "
                f"{', '.join(REASONING_FIELDS)} or inline in the content): request it in model.reasoning "
                "(e.g. {enabled: true}) or check that the pinned provider returns it")
    return ""


def settle(cfg: Config, found: Preflight, folder: Path) -> None:
    """Whether ``max_tokens`` counts reasoning is the provider's rule, not the budget's: where this
    reply leaves it undecided (the model stopped on its own), take the verdict of the newest
    preflight on file that settled it for the same endpoint and model settings, young enough
    (:func:`mip.job.preflight_match.why_not_for`), e.g. a ``budget=smoke`` one."""
    import orjson

    from mip.job.preflight_match import why_not_for

    if found.max_tokens_counts_reasoning != "undecided" or found.completion_tokens is None:
        return
    for path in sorted(folder.glob("*.json"), reverse=True):
        try:
            other = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        verdict = other.get("max_tokens_counts_reasoning") if isinstance(other, dict) else None
        if verdict in ("yes", "no") and why_not_for(cfg, other) is None:
            found.max_tokens_counts_reasoning = verdict
            found.counting += (f"; settled by the preflight {path.name} (max_tokens {other.get('max_tokens')}): "
                               f"{other.get('counting')}")
            return
    found.counting += ("; a smoke preflight's verdict holds for this budget too: "
                       f"run -m budget=smoke,{cfg.budget.name} preflight=only")
