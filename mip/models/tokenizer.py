"""A model's tokenizer for counting prompt tokens before a call, and the count itself: one
place for the dry run (mip.job.tokens.OfflineTokenizer) and the API backend (openai_compat).

A name that is a folder path (``/…``, ``~/…``, ``./…``) and not on this machine is no
tokenizer, found without importing transformers (seconds of a short job's start); a hub id
is looked up in the Hugging Face cache (``offline``) or the hub.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def load_tokenizer(name: str | None, offline: bool = True) -> Any | None:
    """The tokenizer ``name`` names, or None where it is not to be had (the caller estimates)."""
    if not name or name in ("auto", "mock"):
        return None
    if name.startswith(("/", "~", ".")):
        folder = Path(name).expanduser()
        if not (folder / "tokenizer_config.json").is_file():
            return None
        name = str(folder)
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=offline)
    except Exception:  # noqa: BLE001 - no transformers, or not in the cache and offline: estimate
        return None


def chat_token_counts(tokenizer: Any, prompts: Sequence[str]) -> list[int]:
    """Tokens of each prompt as the model reads it: one user turn in the chat template with the
    generation prompt (the text itself where the tokenizer has no template)."""
    if not prompts:  # a tokenizer given an empty batch raises
        return []
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
             if tokenizer.chat_template else p for p in prompts]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
