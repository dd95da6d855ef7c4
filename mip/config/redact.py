"""Configs as plain containers for records and W&B, with secret-looking values masked; the
same masking for every file mip writes (config.yaml, .hydra/, run.log: :func:`mask_text`,
:class:`SecretFilter`, :mod:`mip.tools.hydra_callbacks`).

>>> redact({"api_key": "sk-1", "api_key_env": "OPENROUTER_API_KEY"})
{'api_key': '***', 'api_key_env': 'OPENROUTER_API_KEY'}
>>> redact({"api_key_env": "sk-or-v1-pasted", "extra_body": {"note": "key sk-or-v1-pasted"}})
{'api_key_env': '***', 'extra_body': {'note': 'key ***'}}

Exercised by ``pytest tests/test_secrets.py``.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
import logging
import os
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
    """Tuples as lists, the way OmegaConf and JSON give them; enum fields (model.traces) as their values."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


# A key is secret-looking when one of its "_"/"-"-separated words contains one of these (api_key,
# x-api-key, client_secret, mysecret, password, authorization), or when its last word is
# "token" (hf_token, access_token, token). "token" elsewhere is no secret: counts, limits and
# names (max_tokens, max_tokens_param, tokenizer) are kept, and api_key_env holds a
# variable's name, not a key (unless a key was pasted there: see secret_values).
_SECRET_WORDS = ("apikey", "secret", "password", "passwd", "authorization", "bearer", "credential")
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key")})
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MASK = "***"


def secret_key(name: str) -> bool:
    """Whether a config key's value should be masked.

    >>> [secret_key(k) for k in ("api_key", "hf_token", "max_tokens_param", "api_key_env")]
    [True, True, False, False]
    """
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()) if w]
    if not words or words[-1] == "env":
        return False
    pairs = set(zip(words, words[1:]))
    return bool(any(s in w for w in words for s in _SECRET_WORDS) or _SECRET_PAIRS & pairs or words[-1] == "token")


def _names_a_key(name: str) -> bool:
    """A field that names the variable holding a secret (api_key_env, hf_token_env)."""
    words = str(name).lower().rsplit("_env", 1)
    return len(words) == 2 and not words[1] and secret_key(words[0])


def secret_values(plain: Any) -> set[str]:
    """The strings to mask wherever they appear in a plain config: the values of secret-looking
    keys, a key pasted where a variable's name belongs (``api_key_env=sk-…``), and the value of
    each variable such a field names. The environment is read here only to mask what it holds."""
    found: set[str] = set()
    stack = [plain]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack += value
        if not isinstance(value, dict):
            continue
        for k, v in value.items():
            stack.append(v)
            if not (isinstance(v, str) and v.strip()):
                continue
            if secret_key(k) or (_names_a_key(k) and not _VARIABLE.match(v)):
                found.add(v)
            elif _names_a_key(k) and os.environ.get(v, "").strip():
                found.update({os.environ[v], os.environ[v].strip()})
    return found - {MASK}


def mask_text(text: str, secrets: set[str]) -> str:
    """``text`` with each secret of four characters or more replaced by ``***`` (the longest
    first; a shorter one would mask ordinary words, and is masked only where it is a whole value).

    >>> mask_text("+model.extra_body.api_key=sk-123456", {"sk-123456"})
    '+model.extra_body.api_key=***'
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4 and secret in text:
            text = text.replace(secret, MASK)
    return text


def redact(value: Any, secrets: set[str] | None = None) -> Any:
    """Replace the values of secret-looking keys (see :func:`secret_key`), and every other
    string holding one of ``secrets`` (by default :func:`secret_values` of ``value``).

    Keys belong in environment variables; this guards against one pasted into a config.
    """
    if secrets is None:
        secrets = secret_values(value)
    if isinstance(value, dict):
        return {k: MASK if secret_key(k) and isinstance(v, str) and v else redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str) and secrets:
        return MASK if value in secrets else mask_text(value, secrets)
    return value


class SecretFilter(logging.Filter):
    """A logging filter that masks ``secrets`` in every message it passes (run.log, the console)."""

    def __init__(self, secrets: set[str]):
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_text(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, None
        return True
