"""The chat-completions API as data: the request body mip sends, the SDK's retry rules, and
the completion read back from a reply — pure functions, tested directly.

>>> retry_delay({"Retry-After": "2"}, 0)
2.0
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import time
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import ValidationError

from mip.config import OpenAICompatModelConfig
from mip.config.masking import printable
from mip.models.base import Completion, Request
from mip.experiment.records import schema_error
from mip.models.replies import content_text, readable, split_thoughts, with_lone_surrogates

log = logging.getLogger(__name__)
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")

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

    The model's temperature (0, greedy, unless its config says otherwise; null: left out),
    the output limit under ``cfg.max_tokens_param``, provider pinning,
    the reasoning object, chat-template arguments, a split reasoning budget and
    ``extra_body``, all at the top level as the server reads them.
    """
    body: dict[str, Any] = {
        **cfg.extra_body,  # first: it never overwrites what mip sets (mip.models.check_schema refuses that)
        "model": model_id or cfg.model_id,
        "messages": [{"role": "user", "content": request.prompt}],
        **({"temperature": cfg.temperature} if cfg.temperature is not None else {}),
        cfg.max_tokens_param: request.max_tokens,
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
            raise ValueError(f"Budget {request.max_tokens} leaves no reasoning tokens after "
                             f"{cfg.budget_split.answer_tokens} answer tokens.")
        set_path(body, cfg.budget_split.reasoning_field, reasoning_tokens)
        if not cfg.budget_split.max_tokens_counts_reasoning:  # the answer's own limit: the budget stays the sum
            body[cfg.max_tokens_param] = cfg.budget_split.answer_tokens
    return body


def asked_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, or ``Retry-After`` in seconds or as
    an HTTP date; None when it asked nothing readable.

    >>> asked_wait({"Retry-After": "7200"}), asked_wait({"retry-after-ms": "1500"}), asked_wait({})
    (7200.0, 1.5, None)
    """
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lower:
            return float(lower["retry-after-ms"]) / 1000
        if "retry-after" in lower:
            value = lower["retry-after"]
            try:
                return float(value)
            except ValueError:
                return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None
    return None


def retry_delay(headers: Mapping[str, str], retries_done: int, jitter: float | None = None,
                longest: float = RETRY_AFTER_MAX_S) -> float:
    """Seconds to wait before the next try.

    What the server asks for — ``retry-after-ms``, or ``Retry-After`` in seconds or as an
    HTTP date — when that is between 0 and ``longest`` s (60 s, the SDK's rule; a backend
    that stops on a longer wait passes its own); otherwise 0.5 s doubling per retry up to
    8 s, less up to 25 % jitter (the ``openai`` SDK's rule).

    >>> retry_delay({"Retry-After": "2"}, 0)
    2.0
    >>> retry_delay({}, 3, jitter=0.0)
    4.0
    """
    asked = asked_wait(headers)
    if asked is not None and 0 <= asked <= longest:
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
    """The ``error.message`` of an error body, else the body's start. A message an aggregator
    wraps — OpenRouter's "Provider returned error" with the provider's own body in
    ``error.metadata.raw`` (https://openrouter.ai/docs/api-reference/errors) — is read whole:
    the provider's message follows the wrapper's, so a context-length refusal inside is found.
    Google's endpoint answers with a list of error objects.

    >>> raw = orjson.dumps({"message": "too long"}).decode()
    >>> error_message(orjson.dumps({"error": {"code": 400, "message": "Provider returned error",
    ...                                       "metadata": {"provider_name": "DeepInfra", "raw": raw}}}))
    'Provider returned error (DeepInfra): too long'
    """
    try:  # control characters escaped: the message is printed and logged (mip.config.masking.printable)
        return printable(_message(orjson.loads(raw))[:1000])
    except (orjson.JSONDecodeError, AttributeError):
        return printable(raw[:500].decode("utf-8", "replace"))


def _message(data: Any, depth: int = 0) -> str:
    if isinstance(data, list) and data:  # Google's endpoint: [{"error": {…}}]
        data = data[0]
    error = data.get("error", data) if isinstance(data, dict) else data
    if not isinstance(error, dict):
        return str(error)
    message = str(error.get("message", error) if "message" in error else error)
    metadata = error.get("metadata")
    inner = metadata.get("raw") if isinstance(metadata, dict) else None
    if inner in (None, "") or depth > 2:
        return message
    if isinstance(inner, (str, bytes)):
        try:
            inner = orjson.loads(inner)
        except orjson.JSONDecodeError:
            pass
    who = metadata.get("provider_name")
    return f"{message}{f' ({who})' if isinstance(who, str) else ''}: {_message(inner, depth + 1)}"


def reasoning_of(message: Mapping[str, Any]) -> tuple[str | None, dict[str, Any], list[str]]:
    """The reasoning trace, the other reasoning fields verbatim, and the fields the trace was.

    Servers put the trace in ``reasoning`` (current vLLM, OpenRouter), ``reasoning_content``
    (older vLLM, others) or OpenRouter's ``reasoning_details`` (text and summary kinds). The
    trace is the first of these present. A field whose value is exactly the trace is named
    in the third value rather than kept twice (traces run to 100 KB); so is
    ``reasoning_details`` when its text and summary parts, joined with newlines, are the
    trace: its items are kept without that text (their type, format, signature, encrypted
    data). Every other field (one with different text) is kept as returned.
    """
    fields = {name: message[name] for name in ("reasoning", "reasoning_content", "reasoning_details")
              if message.get(name) not in (None, "", [])}
    details = fields.get("reasoning_details")
    detail_text = _details_text(details) if isinstance(details, list) else None
    trace = fields.get("reasoning") or fields.get("reasoning_content") or detail_text
    if not isinstance(trace, str):
        return None, fields, []
    same = [name for name, value in fields.items()
            if value == trace or (name == "reasoning_details" and detail_text == trace)]
    kept = {name: value for name, value in fields.items() if name not in same}
    if "reasoning_details" in same:  # the structure stays, its text is the trace
        kept["reasoning_details"] = [{k: v for k, v in d.items() if k not in ("text", "summary")}
                                     if isinstance(d, dict) else d for d in details]
    return trace, kept, same


def _details_text(details: list) -> str | None:
    """The text and summary parts of OpenRouter's ``reasoning_details``, joined with newlines."""
    parts = [d.get("text") or d.get("summary") or "" for d in details if isinstance(d, dict)]
    return "\n".join(p for p in parts if isinstance(p, str) and p) or None


def completion_from_body(request_id: str, raw: bytes, latency: float, url: str) -> Completion:
    """:func:`completion_from` of a raw HTTP 200 body from ``url``; a body that is no JSON is an
    error that says why: not UTF-8 (an encoding error), or likely a web page."""
    try:
        return completion_from(request_id, orjson.loads(raw), latency)
    except orjson.JSONDecodeError:
        try:  # half a surrogate pair escaped (an emoji cut): JSON all the same, the half read as U+FFFD
            body, lone = with_lone_surrogates(raw) if _ESCAPED_SURROGATE.search(raw) else (None, 0)
        except ValueError:
            lone = 0
        if lone:
            log.warning("%s: the reply escapes %d lone surrogate(s) (half an emoji?); read as U+FFFD", request_id, lone)
            return completion_from(request_id, body, latency)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:  # JSON is UTF-8 (RFC 8259): the reply was re-encoded on its way
            return Completion(request_id, latency_s=latency, error=(
                f"{url} answered HTTP 200 with a body that is not UTF-8: an encoding error at byte {e.start:,} of "
                f"{len(raw):,} ({raw[e.start:e.start + 1]!r}); the server or a proxy on the way sent another encoding"))
        head = raw[:60].decode("utf-8", "replace").strip().replace("\n", " ")
        return Completion(request_id, latency_s=latency, error=(
            f"{url} answered HTTP 200 with no JSON ({len(raw)} bytes: {head!r}…). "
            "A web page here usually means model.base_url is not the API root (e.g. https://host/v1)."))


def completion_from(request_id: str, response: Any, latency: float) -> Completion:
    """A Completion from a decoded chat-completions body, or one with ``error`` set when the
    body is no model's answer: it reports an error (some servers answer HTTP 200 with
    ``{"error": …}``), has no choices, a choice without a readable message (none, ``null``,
    content that is a number or a bare object), a ``usage`` that is no object, or is not a
    completion at all. Only a model's answer becomes a verdict: anything else is the server's failure."""
    if not isinstance(response, dict):
        return Completion(request_id, error=f"a 200 response that is not a JSON object: {str(response)[:200]}",
                          latency_s=latency)
    error = response.get("error")
    choices = response.get("choices") or []
    if error or not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Completion(request_id, error=f"error in a 200 response: {error or 'no choices'}", latency_s=latency)
    choice = choices[0]
    if choice.get("error") or choice.get("finish_reason") == "error":
        return Completion(request_id, error=f"error in the choice: {choice.get('error')}", latency_s=latency)
    message = choice.get("message")
    why = (f"its message is {_shown(message)}" if not isinstance(message, dict)
           else f"its content is {_shown(message.get('content'))}" if not readable(message.get("content"))
           else f"its usage is {_shown(response.get('usage'))}" if not isinstance(response.get("usage") or {}, dict)
           else None)
    if why:
        return Completion(request_id, latency_s=latency, error=f"a 200 response that is no model's answer: {why}")
    try:
        return _completion(request_id, response, choice, message, latency)
    except ValidationError as e:  # a field of the wrong type (tokens as text, a model that is no string)
        return Completion(request_id, latency_s=latency,
                          error=f"a 200 response with a malformed field: {schema_error(e)}")


def _shown(value: Any) -> str:
    return "missing" if value is None else f"{type(value).__name__} {str(value)[:60]!r}"


def _completion(request_id: str, response: dict, choice: dict, message: dict, latency: float) -> Completion:
    trace, raw, same = reasoning_of(message)
    # Gemini's thought summaries come inline, before the answer: the trace, never the answer.
    thoughts, output = split_thoughts(content_text(message.get("content"), message.get("refusal")))
    if thoughts is not None:
        trace, same = (f"{thoughts}\n{trace}" if trace else thoughts), [*same, "content"]
    usage = response.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    return Completion(
        request_id,
        output=output,  # text parts joined, not JSON-encoded
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
