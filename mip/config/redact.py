"""Configs as plain containers for records and W&B, with secret-looking values masked.

>>> redact({"api_key": "sk-1", "api_key_env": "OPENROUTER_API_KEY"})
{'api_key': '***', 'api_key_env': 'OPENROUTER_API_KEY'}
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from omegaconf import OmegaConf


def to_plain(obj: Any) -> Any:
    """A config (dataclass or OmegaConf node) as plain containers, secret-looking values
    redacted (for records and W&B)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return redact(_lists(dataclasses.asdict(obj)))  # resolved already: no OmegaConf round trip
    return redact(OmegaConf.to_container(OmegaConf.structured(obj), resolve=True))


def _lists(value: Any) -> Any:
    """Tuples as lists, the way OmegaConf and JSON give them."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


# A key is secret-looking when one of its "_"/"-"-separated words is one of these (api_key,
# x-api-key, client_secret, password, authorization), or when its last word is "token"
# (hf_token, access_token, token). Counts and limits (max_tokens, max_tokens_param,
# completion_tokens) are not secrets, and api_key_env holds a variable's name, not a key.
_SECRET_WORDS = frozenset({"apikey", "secret", "password", "passwd", "authorization", "bearer", "credentials"})
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key")})


def secret_key(name: str) -> bool:
    """Whether a config key's value should be masked.

    >>> [secret_key(k) for k in ("api_key", "hf_token", "max_tokens_param", "api_key_env")]
    [True, True, False, False]
    """
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()) if w]
    if not words or words[-1] == "env":
        return False
    pairs = set(zip(words, words[1:]))
    return bool(_SECRET_WORDS & set(words) or _SECRET_PAIRS & pairs or words[-1] == "token")


def redact(value: Any) -> Any:
    """Replace the values of secret-looking keys (see :func:`secret_key`).

    Keys belong in environment variables; this guards against one pasted into a config.
    """
    if isinstance(value, dict):
        return {k: "***" if secret_key(k) and isinstance(v, str) and v else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value
