"""A model's tokenizer for counting prompt tokens before a call, and the count itself: one
place for the dry run (mip.job.tokens.OfflineTokenizer) and the API backend (openai_compat).

A name that is a folder path (``/…``, ``~/…``, ``./…``) and not on this machine is no
tokenizer, found without importing transformers (seconds of a short job's start); a hub id
is looked up in the Hugging Face cache (``offline``) or the hub.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


#: Model ids that name no tokenizer: a server's own model (``auto``) and the scripted mock.
NOT_TOKENIZERS = ("auto", "mock")


def tokenizer_names(*names: str | None) -> list[str]:
    """Those of ``names`` that may name a tokenizer, in order: the one home of which names do.

    >>> tokenizer_names("HuggingFaceTB/SmolLM2-135M-Instruct", "auto", None, "mock")
    ['HuggingFaceTB/SmolLM2-135M-Instruct']
    """
    return [n for n in names if n and n not in NOT_TOKENIZERS]


def load_tokenizer(name: str | None, offline: bool = True) -> Any | None:
    """The tokenizer ``name`` names, or None where it is not to be had (the caller estimates)."""
    return find_tokenizer(name, offline)[0]


def find_tokenizer(name: str | None, offline: bool = True) -> tuple[Any | None, str]:
    """``(tokenizer, "")``, or ``(None, why)`` where it is not to be had: a line that says which
    tokenizer and what failed (not in the cache and offline, a gated repository, no such folder)."""
    if not tokenizer_names(name):
        return None, "the model config names no tokenizer (model.tokenizer)"
    if name.startswith(("/", "~", ".")):
        folder = Path(name).expanduser()
        if not (folder / "tokenizer_config.json").is_file():
            return None, f"the tokenizer folder {name} has no tokenizer_config.json"
        name = str(folder)
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=offline), ""
    except Exception as e:  # noqa: BLE001 - no transformers, or not in the cache and offline: estimate
        first = (str(e).strip().splitlines() or [""])[0][:200]
        where = "in the Hugging Face cache" if offline else "in the Hugging Face cache or on the hub"
        return None, f"the tokenizer {name} is not {where} ({type(e).__name__}: {first})"


def estimate_note(name: str | None, why: str, chars_per_token: float) -> str:
    """What a job or dry run says when it estimates prompt tokens instead of counting them, and how to count them."""
    hub_id = name and not name.startswith(("/", "~", "."))
    get = (f" For exact counts, put the tokenizer on this machine: `huggingface-cli download {name}` (a gated model "
           "needs its licence accepted on the hub and HF_TOKEN set)." if hub_id else "")
    return (f"Prompt tokens are estimated at {chars_per_token:g} characters per token, not counted: {why}. An estimate "
            "can be off by a third (NER: 27K estimated, 36.6K counted), so a prompt near the context window may be "
            "stored as input_overflow without a call, or sent and refused by the provider (then stored as "
            f"input_overflow from its refusal).{get}")


def chat_token_counts(tokenizer: Any, prompts: Sequence[str]) -> list[int]:
    """Tokens of each prompt as the model reads it: one user turn in the chat template with the
    generation prompt (the text itself where the tokenizer has no template)."""
    if not prompts:  # a tokenizer given an empty batch raises
        return []
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
             if tokenizer.chat_template else p for p in prompts]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def server_token_counts(post: Callable[[bytes], bytes], model_id: str, prompts: Sequence[str], url: str) -> list[int]:
    """Tokens of each prompt as the server counts them: vLLM's ``/tokenize`` at ``url``, posted
    one prompt at a time through ``post`` (the chat template applied, the generation prompt
    added). A failure says how to go on without it."""
    from mip.models.base import BackendSetupError

    counts = []
    for prompt in prompts:
        body = json.dumps({"model": model_id, "messages": [{"role": "user", "content": prompt}],
                           "add_generation_prompt": True}).encode()
        try:
            counts.append(int(json.loads(post(body))["count"]))
        except (OSError, ValueError, KeyError, BackendSetupError) as e:
            raise BackendSetupError(f"Counting tokens with {url} failed ({e}); unset model.server_tokenize "
                                    "to estimate them instead.") from e
    return counts
