"""The chat-completions API as data: the request body mip sends, the SDK's retry rules, and
the completion read back from a reply — pure functions, tested directly.

>>> retry_delay({"Retry-After": "2"}, 0)
2.0
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import ValidationError

from mip.config import OpenAICompatModelConfig
from mip.models.base import Completion, Request
from mip.records import schema_error
from mip.models.replies import content_text

RETRY_AFTER_MAX_S = 60.0
BACKOFF_START_S, BACKOFF_MAX_S = 0.5, 8.0


def set_path(body: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_path(b, "reasoning.max_tokens", 5)`` sets ``b["reasoning"]["max_tokens"] = 5``."""
    *parents, leaf = dotted.split(".")
    for key in parents:
        body = body.setdefault(key, {})
    body[leaf] = value


def request_body(cfg: OpenAICompatModelConfig, request: Request, model_id: str | None = None) -> dict[str, Any]:
    """The JSON body of one chat-completions request (pure; tested directly).

    Greedy decoding, the output limit under ``cfg.max_tokens_param``, provider pinning,
    the reasoning object, chat-template arguments, a split reasoning budget and
    ``extra_body``, all at the top level as the server reads them.
    """
    body: dict[str, Any] = {
        "model": model_id or cfg.model_id,
        "messages": [{"role": "user", "content": request.prompt}],
        "temperature": 0.0,
        cfg.max_tokens_param: request.max_tokens,
        **cfg.extra_body,
    }
    if cfg.provider.order:
        body["provider"] = {
            "order": list(cfg.provider.order),
            "allow_fallbacks": cfg.provider.allow_fallbacks,
            "require_parameters": cfg.provider.require_parameters,
            **({"quantizations": list(cfg.provider.quantizations)} if cfg.provider.quantizations else {}),
        }
    if cfg.reasoning:
        body["reasoning"] = {**cfg.reasoning}
    if cfg.chat_template_kwargs:
        body["chat_template_kwargs"] = {**cfg.chat_template_kwargs}
    if cfg.budget_split.answer_tokens is not None:
        reasoning_tokens = request.max_tokens - cfg.budget_split.answer_tokens
        if reasoning_tokens < 1:
            raise ValueError(f"Budget {request.max_tokens} leaves no reasoning tokens after {cfg.budget_split.answer_tokens} answer tokens.")
        set_path(body, cfg.budget_split.reasoning_field, reasoning_tokens)
    return body


def retry_delay(headers: Mapping[str, str], retries_done: int, jitter: float | None = None) -> float:
    """Seconds to wait before the next try.

    What the server asks for — ``retry-after-ms``, or ``Retry-After`` in seconds or as an
    HTTP date — when that is between 0 and 60 s; otherwise 0.5 s doubling per retry up to
    8 s, less up to 25 % jitter (the ``openai`` SDK's rule).

    >>> retry_delay({"Retry-After": "2"}, 0)
    2.0
    >>> retry_delay({}, 3, jitter=0.0)
    4.0
    """
    lower = {k.lower(): v for k, v in headers.items()}
    asked: float | None = None
    try:
        if "retry-after-ms" in lower:
            asked = float(lower["retry-after-ms"]) / 1000
        elif "retry-after" in lower:
            value = lower["retry-after"]
            try:
                asked = float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                asked = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        asked = None
    if asked is not None and 0 <= asked <= RETRY_AFTER_MAX_S:
        return asked
    backoff = min(BACKOFF_START_S * 2**retries_done, BACKOFF_MAX_S)
    return backoff * (1 - 0.25 * (random.random() if jitter is None else jitter))


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP error status is worth another try (``x-should-retry`` decides when sent)."""
    verdict = {k.lower(): v for k, v in headers.items()}.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return status in (408, 409, 429) or status >= 500


def error_message(raw: bytes) -> str:
    """The ``error.message`` of an error body, else the body's start."""
    try:
        data = orjson.loads(raw)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message") if isinstance(error, dict) else error
        return str(message)[:500]
    except (orjson.JSONDecodeError, AttributeError):
        return raw[:500].decode("utf-8", "replace")


def reasoning_of(message: Mapping[str, Any]) -> tuple[str | None, dict[str, Any], list[str]]:
    """The reasoning trace, the other reasoning fields verbatim, and the fields the trace was.

    Servers put the trace in ``reasoning`` (current vLLM, OpenRouter), ``reasoning_content``
    (older vLLM, others) or OpenRouter's ``reasoning_details`` (text and summary kinds). The
    trace is the first of these present. A field whose value is exactly the trace is named
    in the third value rather than kept twice (traces run to 100 KB); every other field
    (``reasoning_details``, a field with different text) is kept as returned.
    """
    fields = {name: message[name] for name in ("reasoning", "reasoning_content", "reasoning_details")
              if message.get(name) not in (None, "", [])}
    trace = fields.get("reasoning") or fields.get("reasoning_content")
    if not trace and isinstance(fields.get("reasoning_details"), list):
        parts = [d.get("text") or d.get("summary") or "" for d in fields["reasoning_details"] if isinstance(d, dict)]
        trace = "\n".join(p for p in parts if isinstance(p, str) and p) or None
    if not isinstance(trace, str):
        return None, fields, []
    same = [name for name, value in fields.items() if value == trace]
    return trace, {name: value for name, value in fields.items() if name not in same}, same


def completion_from(request_id: str, response: Any, latency: float) -> Completion:
    """A Completion from a decoded chat-completions body, or one with ``error`` set when the
    body reports an error (some servers answer HTTP 200 with ``{"error": …}``), has no
    choices, or is not a completion at all."""
    if not isinstance(response, dict):
        return Completion(request_id, error=f"a 200 response that is not a JSON object: {str(response)[:200]}", latency_s=latency)
    error = response.get("error")
    choices = response.get("choices") or []
    if error or not choices or not isinstance(choices[0], dict):
        return Completion(request_id, error=f"error in a 200 response: {error or 'no choices'}", latency_s=latency)
    choice = choices[0]
    if choice.get("error") or choice.get("finish_reason") == "error":
        return Completion(request_id, error=f"error in the choice: {choice.get('error')}", latency_s=latency)
    message = choice.get("message") or {}
    try:
        return _completion(request_id, response, choice, message, latency)
    except ValidationError as e:  # a field of the wrong type (tokens as text, a model that is no string)
        return Completion(request_id, latency_s=latency, error=f"a 200 response with a malformed field: {schema_error(e)}")


def _completion(request_id: str, response: dict, choice: dict, message: dict, latency: float) -> Completion:
    trace, raw, same = reasoning_of(message)
    usage = response.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    return Completion(
        request_id,
        output=content_text(message.get("content"), message.get("refusal")),  # text parts joined, not JSON-encoded
        reasoning=trace,
        reasoning_raw=raw,
        reasoning_from=same,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        reasoning_tokens=details.get("reasoning_tokens") if isinstance(details, dict) else None,
        latency_s=latency,
        usage=usage,
        provider=response.get("provider"),
        served_model=response.get("model"),
    )
