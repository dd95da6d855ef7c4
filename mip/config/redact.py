"""Configs as plain containers for records and W&B, with secret-looking values masked; the
same masking for every file mip writes (config.yaml, .hydra/, run.log: :func:`mask_text`,
:class:`mip.config.masking.SecretFilter`, :mod:`mip.entry.hydra_callbacks`).

>>> redact({"api_key": "sk-1", "api_key_env": "OPENROUTER_API_KEY"})
{'api_key': '***', 'api_key_env': 'OPENROUTER_API_KEY'}
>>> redact({"api_key_env": "sk-or-v1-pasted", "extra_body": {"note": "key sk-or-v1-pasted"}})
{'api_key_env': '***', 'extra_body': {'note': 'key ***'}}

Exercised by ``pytest tests/test_secrets.py``.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
import os
import re
from typing import Any

from omegaconf import OmegaConf

from mip.config.masking import MASK


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
# x-api-key, client_secret, mysecret, password, authorization, cookie), or when its last word is
# "token" (hf_token, access_token, token). "token" elsewhere is no secret: counts, limits and
# names (max_tokens, max_tokens_param, tokenizer) are kept, and api_key_env holds a
# variable's name, not a key (unless a key was pasted there: see secret_values).
_SECRET_WORDS = ("apikey", "secret", "password", "passwd", "authorization", "bearer", "credential", "cookie")
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key")})
# Whole words that name a credential: ``auth`` (extra_body.auth, x-auth), and a last word ``key``
# (extra_body.key, subscription-key); ``author`` or ``key_scheme`` stay readable.
_SECRET_WHOLE = frozenset({"auth", "sig", "signature"})
# An environment variable's name: letters, digits, "_".
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Values that are credentials whatever their key is called: the prefixes of the keys of OpenAI
# (sk-, sk-proj-), OpenRouter (sk-or-), Anthropic (sk-ant-), Stripe-style (sk_, rk_), Hugging Face
# (hf_), GitHub (ghp_, gho_, github_pat_), GitLab (glpat-), Slack (xox?-), Google (AIza, ya29.),
# a JWT (eyJ), an HTTP credential (Bearer …, Basic …); and any long token of letters and digits
# in both cases (a random key) that is not a hex digest.
_CREDENTIAL_VALUE = re.compile(
    r"(sk[-_]|rk[-_]|hf_|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|AIza|ya29\.|eyJ)[A-Za-z0-9._\-]{6,}"
    r"|(?i:bearer|basic|token)\s+(?=\S*[0-9])[A-Za-z0-9._~+/=\-]{8,}")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")


def secret_key(name: str) -> bool:
    """Whether a config key's value should be masked.

    >>> [secret_key(k) for k in ("api_key", "hf_token", "max_tokens_param", "api_key_env")]
    [True, True, False, False]
    """
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()) if w]
    if not words or words[-1] == "env":
        return False
    pairs = set(zip(words, words[1:]))
    return bool(any(s in w for w in words for s in _SECRET_WORDS) or _SECRET_PAIRS & pairs
                or words[-1] in ("token", "key") or _SECRET_WHOLE & set(words))


def looks_like_credential(value: str) -> bool:
    """Whether a string is a credential by its look, whatever field holds it (a key under
    ``extra_body.user``, a header value ``Bearer …``, a key pasted as a variable's name).

    >>> [looks_like_credential(v) for v in ("sk-or-v1-0123abcd", "Bearer abcdefgh12", "OPENROUTER_API_KEY",
    ...                                     "Qwen/Qwen3-235B-A22B-Thinking-2507",
    ...                                     "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    ...                                     "HuggingFaceTB/SmolLM2-135M-Instruct", "/scratch/JSmith1/mip/results",
    ...                                     "token counting")]
    [True, True, False, False, False, False, False, False]
    """
    value = value.strip()
    if _CREDENTIAL_VALUE.fullmatch(value):
        return True
    if not _LONG_TOKEN.fullmatch(value) or re.fullmatch(r"[0-9a-f]+", value):  # a hex digest is no key
        return False
    # A random key mixes upper case, lower case and digits in a long run; names, ids and
    # variable names and paths are words joined by "_", "-", "/" or ".".
    return any(len(part) >= 16 and re.search(r"[a-z]", part) and re.search(r"[A-Z]", part) and re.search(r"[0-9]", part)
               for part in re.split(r"[_\-/.]", value))


def url_secrets(value: str) -> set[str]:
    """The key-bearing parts of a URL (``model.base_url``, ``MIP_SERVER_URL``): its userinfo, a
    path segment that looks like a key (:func:`looks_like_credential`), the value of every query
    parameter (``?key=…``, ``?sig=…``) and a bare ``?TOKEN`` — each as typed, decoded and encoded
    again (``%2b`` and ``%2B``, ``+`` and ``%20``) — but for what cannot be a key: values under
    eight characters, numbers, dates and versions (``?api-version=2024-10-21``).

    >>> sorted(url_secrets("https://mip:pa55word-1@host/v1?key=AbCd1234efgh&api-version=2024-10-21"))
    ['AbCd1234efgh', 'bWlwOnBhNTV3b3JkLTE=', 'mip%3Apa55word-1', 'mip%3apa55word-1', 'mip:pa55word-1', 'pa55word-1']
    >>> sorted(url_secrets("http://h/k/Pk7path0AbCdEf01/v1?sig=a%2bDEF12345&BareToken99"))
    ['BareToken99', 'Pk7path0AbCdEf01', 'a%2BDEF12345', 'a%2bDEF12345', 'a+DEF12345']
    """
    import base64
    from urllib.parse import unquote, urlsplit

    if "://" not in value:
        return set()
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return set()
    found: set[str] = set()
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        found |= _url_forms(userinfo) | _url_forms(userinfo.partition(":")[2])
        found.add(base64.b64encode(unquote(userinfo).encode()).decode("ascii"))  # as HTTP Basic sends it
    for segment in parts.path.split("/"):
        if _key_segment(unquote(segment)):
            found |= _url_forms(segment)
    for item in parts.query.split("&"):
        name, equals, raw = item.partition("=")
        if not equals:
            name, raw = "", name  # a bare ?TOKEN
        decoded = unquote(raw.replace("+", " "))
        if secret_key(name) or (len(decoded) >= 8 and not re.fullmatch(r"[0-9.:\-]+", decoded)):
            found |= _url_forms(raw)
    return {f for f in found if f}


def _key_segment(segment: str) -> bool:
    """Whether a URL path segment is a key: one by its look, or a run of 16 characters or more
    mixing upper case, lower case and digits (``/v1``, ``/api``, ``/openai``, ``/deployments`` are none)."""
    return looks_like_credential(segment) or any(
        len(part) >= 16 and re.search(r"[a-z]", part) and re.search(r"[A-Z]", part) and re.search(r"[0-9]", part)
        for part in re.split(r"[_\-.~]", segment))


def _url_forms(raw: str) -> set[str]:
    """A URL part as typed and in each form a client, a server or an error message may give it:
    decoded (``+`` as ``+`` and as a space), percent-encoded again, escapes in either case."""
    from urllib.parse import quote, unquote

    if not raw:
        return set()
    decoded = {unquote(raw), unquote(raw.replace("+", " "))}
    forms = {raw, *decoded, *(quote(d, safe="") for d in decoded), *(quote(d, safe="+") for d in decoded)}
    return forms | {re.sub(r"%[0-9A-Fa-f]{2}", lambda m: m.group().swapcase(), f) for f in forms}


def variable_name(value: str) -> bool:
    """Whether ``value`` can be what ``api_key_env`` holds: a variable's name that is no key
    pasted in its place, with a dash or without (``sk_live…``, ``AIza…``, a long run of letters
    and digits with no ``_`` between words).

    >>> [variable_name(v) for v in ("OPENROUTER_API_KEY", "my_key", "sk-or-v1-abc", "sk_live_abc123",
    ...                             "Q0FGH7J2K9LMNPX4RT5V")]
    [True, True, False, False, False]
    """
    return bool(_VARIABLE.match(value)) and not looks_like_credential(value) and not (
        len(value) >= 16 and re.search(r"[0-9]", value) and "_" not in value)


_SCALAR = re.compile(r"(?i)[-+]?[0-9][0-9_]*(\.[0-9]*)?(e[-+]?[0-9]+)?|true|false|null|none")


def _names_a_key(name: str) -> bool:
    """A field that names the variable holding a secret (api_key_env, hf_token_env)."""
    words = str(name).lower().rsplit("_env", 1)
    return len(words) == 2 and not words[1] and secret_key(words[0])


def secret_values(plain: Any) -> set[str]:
    """The strings to mask wherever they appear in a plain config: the values of secret-looking
    keys, values that look like a credential (:func:`looks_like_credential`), the key-bearing
    parts of URLs (:func:`url_secrets`), a key pasted where a variable's name belongs
    (``api_key_env=sk-…``, or anything that is no variable's name), and the value of
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
            if not (isinstance(v, str) and v.strip()) or _SCALAR.fullmatch(v.strip()):
                continue  # a number, a boolean or null is no key (chars_per_token=3.25)
            if secret_key(k) or looks_like_credential(v) or (_names_a_key(k) and not variable_name(v)):
                found.add(v)
                if "cookie" in str(k).lower():  # each cookie's value alone too (session=…; theme=…)
                    found |= {c for c in (p.partition("=")[2].strip() for p in v.split(";")) if len(c) >= 8}
            elif _names_a_key(k) and os.environ.get(v, "").strip():
                found.update({os.environ[v], os.environ[v].strip()})
            found |= url_secrets(v)
    return found - {MASK}


def typed_secrets(overrides: list[str]) -> set[str]:
    """:func:`secret_values` of command-line overrides as typed (``+model.extra_body.auth=…``,
    ``model.base_url='https://…?key=…'``), each read as its last key and its value unquoted.

    >>> sorted(typed_secrets(["+model.extra_body.auth=abc12345", "model.base_url='http://h/v1?key=K123456789'"]))
    ['K123456789', 'abc12345']
    """
    typed = [o.lstrip("+~").partition("=") for o in overrides]
    return secret_values([{k.rpartition(".")[2]: v.strip().strip("'\"")} for k, _, v in typed])


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
