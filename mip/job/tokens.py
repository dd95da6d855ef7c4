"""Prompt tokens before any call, and the one context-window check (App. D.1).

Counted with the model's tokenizer (or the server's) where the backend has one, else
estimated from characters with the model config's ``chars_per_token``.

>>> estimate_tokens("x" * 35, 3.5), overflows(100, 100), overflows(99, 100)
(11, True, False)
>>> budget_error("m", 32768, "20k", 20000) is None, budget_error("m", 8192, "20k", 20000)[:40]
(True, 'Budget 20k (20000 output tokens) is larg')
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mip.experiment import prompts
from mip.config import HFModelConfig, ModelConfig
from mip.config.budgets import given
from mip.job.notices import first_time
from mip.models import Backend, backend_class
from mip.models.tokenizer import chat_token_counts, estimate_note, find_tokenizer, tokenizer_names

if TYPE_CHECKING:
    from mip.config import Config
    from mip.experiment.planning import Planned
    from mip.job.job_summary import JobSummary
    from mip.strategies import Context

log = logging.getLogger(__name__)


class OfflineTokenizer:
    """Counts prompt tokens for a dry run without building the model's backend (no API key,
    no vLLM, no GPU): with the model's tokenizer where it is on this machine (the Hugging Face
    cache, or the embedded model's converted folder), else None, and the caller estimates.
    ``source`` says which."""

    def __init__(self, model: ModelConfig, cache_dir: str | Path, said_in: str | Path = ""):
        self.model, self.cache_dir = model, Path(cache_dir).expanduser()
        self.said_in = str(said_in)
        """The folder of jobs (a sweep's) within which the estimate note is logged once."""
        self._tokenizer: Any = None
        self.source = f"estimated from characters ({model.chars_per_token:g} per token)"
        self.fallback: str | None = None
        """Why a named tokenizer could not be had (:func:`mip.models.tokenizer.estimate_note`), once tried."""
        self.wanted: str | None = None
        """The tokenizer that could not be had: ``model.tokenizer``, or a local model's own weights' (its model id)."""

    def _load(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer, why = False, "the model config names no tokenizer (model.tokenizer)"
            candidates = self._candidates()
            for name in candidates:
                tokenizer, why = find_tokenizer(name)
                self._tokenizer = tokenizer or False
                if self._tokenizer:
                    self.source = f"counted with the tokenizer of {name}"
                    break
            # An API model's id names no tokenizer; a local model's (vLLM, transformers) names its weights'.
            local = backend_class(self.model.backend).own_tokenizer and candidates
            self.wanted = self.model.tokenizer or (candidates[0] if local else None)
            if not self._tokenizer and self.wanted:
                self.fallback = estimate_note(self.wanted, why, self.model.chars_per_token)
                if first_time(self.said_in, self.fallback):  # once a sweep: its jobs share the reason
                    log.warning(self.fallback)
        return self._tokenizer

    def _candidates(self) -> list[str]:
        names = tokenizer_names(self.model.tokenizer, self.model.model_id)
        if isinstance(self.model, HFModelConfig) and self.model.gguf_package:
            from mip.models.hf_local import converted_dir

            folder = converted_dir(self.model, self.cache_dir)
            names = [str(folder)] if (folder / "tokenizer_config.json").is_file() else []
        return names

    def count_tokens(self, texts: list[str]) -> list[int] | None:
        tokenizer = self._load()
        if not tokenizer:
            return None
        return chat_token_counts(tokenizer, texts)


def estimate_tokens(text: str, chars_per_token: float) -> int:
    """Prompt tokens from characters, for models whose tokenizer is not at hand."""
    return int(len(text) / chars_per_token) + 1


def overflows(prompt_tokens: int, context_window: int) -> bool:
    """Whether a prompt leaves no room for a single output token: an ``input_overflow``
    verdict, found before any call (App. D.1)."""
    return prompt_tokens >= context_window


def budget_error(model: str, context_window: int, budget: str, max_tokens: int) -> str | None:
    """Why a budget cannot run on a model (its output alone would not fit the context
    window), or None. Checked on the login node before a sweep launches and again per job."""
    if max_tokens <= context_window:
        return None
    # The budget as the user gave it: a number set over a name is the number (mip.config.budgets).
    return (f"Budget {given(budget, max_tokens)} ({max_tokens} output tokens) is larger than the context window "
            f"of {model} ({context_window}); choose a smaller budget (e.g. budget=smoke) or another model.")


def output_room(prompt_tokens: int, context_window: int, budget: int) -> int:
    """The output limit of a request: the budget, but never past what the context window
    leaves after the prompt."""
    return max(1, min(budget, context_window - prompt_tokens))


def count_texts(backend: Backend | OfflineTokenizer, texts: list[str], chars_per_token: float,
                quiet: bool = False) -> tuple[list[int], bool]:
    """Tokens of each text and whether they were estimated (saying why, unless ``quiet``)."""
    try:
        tokens = backend.count_tokens(texts)
    except (ImportError, OSError) as e:
        if not quiet:
            print(f"No tokenizer at hand ({e}); prompt tokens are estimated from characters.", file=sys.stderr)
        tokens = None
    if tokens is None:
        return [estimate_tokens(text, chars_per_token) for text in texts], True
    return tokens, False


def counted(backend: Backend | OfflineTokenizer, plans: Iterable[Planned], summary: JobSummary, chars_per_token: float,
            chunk: int = 16) -> Iterator[tuple[Planned, int]]:
    """Each plan with its prompt tokens (for self-prompting, of its instances alone), counted
    a few at a time as they are needed. Adds them up in ``summary``."""
    source = iter(plans)
    while group := list(itertools.islice(source, chunk)):
        texts = [p.prompt if p.prompt is not None else prompts.instance_block(p.texts) for p in group]
        tokens, estimated = count_texts(backend, texts, chars_per_token, quiet=summary.tokens_estimated)
        summary.tokens_estimated |= estimated
        summary.prompt_tokens += sum(tokens)
        yield from zip(group, tokens)


def context_for(cfg: Config, counter: Backend | OfflineTokenizer, **more: Any) -> Context:
    """What a strategy sees of job ``cfg`` (:class:`mip.strategies.Context`): prompt tokens
    counted as the job counts them, the output limit and the context-window check; ``more``
    adds the ``generate`` and attempt log of a job that calls."""
    from mip.strategies import Context

    model, budget = cfg.model, cfg.budget.max_tokens
    return Context(count=lambda texts: count_texts(counter, texts, model.chars_per_token, quiet=True)[0],
                   room=lambda tokens: output_room(tokens, model.context_window, budget),
                   overflows=lambda tokens: overflows(tokens, model.context_window), budget=budget,
                   forced_answer_ok=model.reserved_answer_tokens is not None, **more)
