"""A provider's refusal of a prompt longer than its context window, read from the HTTP status
and the provider's message (each provider words it its own way): an ``input_overflow`` verdict (App. D.1) however it is
found, never an unstored experiment asked again on every rerun.

The messages, as each server writes them:

- OpenRouter (https://openrouter.ai/docs/api-reference/errors, as clients report it), HTTP 400:
  "This endpoint's maximum context length is N tokens. However, you requested about T tokens
  (P of text input, K in the output). …";
- vLLM's OpenAI-compatible server, HTTP 400, in its three wordings: "This model's maximum context
  length is N tokens. However, you requested T tokens (P in the messages, K in the completion). …"
  (``vllm/entrypoints/openai/serving_engine.py``, ``_validate_prompt_and_tokenize``); the
  current "… However, you requested K output tokens and your prompt contains at least P input
  tokens, for a total of at least T tokens. …", whose P is only a lower bound (the prompt is
  tokenised no further than it needs); and "'max_tokens' or 'max_completion_tokens' is too
  large: K. This model's maximum context length is N tokens and your request has P input
  tokens (K > N - P)." when the prompt fits and the output limit does not;
- Google's OpenAI-compatible endpoint, HTTP 400 (status INVALID_ARGUMENT): "The input token
  count (P) exceeds the maximum number of tokens allowed (N)." — Gemini's window holds the
  input alone, so this always is the prompt.

A refusal whose prompt is known to fit (P < N) is no overflow: the request goes again with the
output limit the window leaves (``room``), so prompt + output never pass the window, whatever
the estimate before the call said (:func:`send_within_window`). vLLM's "at least P" tells only
that the prompt is longer than N − K: the request is then sent with an output limit of 1, which
vLLM either refuses with "at least N" (an overflow) or answers with the prompt's exact count in
``usage.prompt_tokens``, and then goes again with N − P. ``model.server_tokenize=true`` counts
exactly before the call and spares that probe.

>>> r = context_refusal(400, "This endpoint's maximum context length is 131072 tokens. However, you "
...                     "requested about 140000 tokens (120000 of text input, 20000 in the output).")
>>> r.window, r.input_tokens, r.overflows, r.room
(131072, 120000, False, 11072)
>>> gemini = "The input token count (1300000) exceeds the maximum number of tokens allowed (1048576)."
>>> context_refusal(400, gemini).overflows
True
>>> context_refusal(400, "prompt is too long") is None
True
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from mip.models.base import Completion, Request
from mip.models.chat_api import error_message
from mip.models.transports import Reply

_N = r"(\d[\d,]*)"
_WINDOW = (re.compile(rf"maximum context length is {_N} tokens", re.I),
           re.compile(rf"exceeds the maximum number of tokens allowed\D*{_N}", re.I))
_TOTAL = re.compile(rf"you requested (?:about )?{_N} tokens \(", re.I)
_OUTPUT = re.compile(rf"{_N} in the (?:output|completion)", re.I)
_INPUT = (re.compile(rf"{_N} (?:of text input|in the messages)", re.I),
          re.compile(rf"your request has {_N} input tokens", re.I),
          re.compile(rf"input token count \({_N}\)", re.I))
_AT_LEAST = re.compile(rf"prompt contains at least {_N} input tokens", re.I)


def _int(match: re.Match | None) -> int | None:
    return int(match.group(1).replace(",", "")) if match else None


@dataclass(frozen=True)
class ContextRefusal:
    """What a context-length refusal says: the provider's window, the prompt's tokens as the
    provider counted them (None: not said), whether that count is only a lower bound, and
    its message."""

    window: int | None
    input_tokens: int | None
    at_least: bool
    message: str

    @property
    def overflows(self) -> bool:
        """Whether the prompt alone does not fit: an input_overflow verdict. A message that
        names no prompt count is about the prompt (Google's)."""
        return self.input_tokens is None or self.window is None or self.input_tokens >= self.window

    @property
    def room(self) -> int | None:
        """The output limit that fits beside an exactly counted prompt that fits; else None."""
        if self.overflows or self.at_least or self.window is None or self.input_tokens is None:
            return None
        return self.window - self.input_tokens


def context_refusal(status: int, message: str) -> ContextRefusal | None:
    """The context-length refusal in an HTTP ``status`` and error ``message`` (None when it is
    another error)."""
    if status not in (400, 413):
        return None
    window = next((w for w in (_int(p.search(message)) for p in _WINDOW) if w is not None), None)
    if window is None:
        return None
    total, output = _int(_TOTAL.search(message)), _int(_OUTPUT.search(message))
    given = next((n for n in (_int(p.search(message)) for p in _INPUT) if n is not None), None)
    if total is not None and output is not None:  # all the input (text, tools), as the provider counted it
        given = total - output
    bound = _int(_AT_LEAST.search(message))
    if given is None and bound is not None:
        return ContextRefusal(window, bound, True, message)
    return ContextRefusal(window, given, False, message)



async def send_within_window(send: Callable[[Any], Awaitable[Reply]], encode: Callable[[Request], Any],
                             request: Request, body: Any) -> tuple[Reply, Request, ContextRefusal | None]:
    """Send ``body`` (``request`` encoded); where a context-length refusal shows the prompt may
    fit, send it again with the output limit that fits (at most two more sends). The last reply,
    the request it answers, and the refusal when it is one."""
    budget, window, probed = request.max_tokens, None, None  # window: set while probing with an output limit of 1
    sends = 0
    while True:
        reply = await send(body)
        sends += 1
        status, _, raw = reply
        refusal = context_refusal(status, error_message(raw)) if status != 200 else None
        if window is not None and status == 200:  # the probe's answer: the prompt's exact count
            used = _prompt_tokens(raw)
            if used is None:  # no count: never score a 1-token answer; say how to count instead
                return reply, request, probed
            if window - used <= request.max_tokens:
                return reply, request, None
            limit, window = min(budget, window - used), None
        elif refusal is None or refusal.overflows:
            return reply, request, refusal
        elif refusal.room is not None and refusal.room < request.max_tokens:
            limit = refusal.room
        elif refusal.at_least and request.max_tokens > 1:
            limit, window, probed = 1, refusal.window, refusal
        else:
            return reply, request, refusal
        if sends == 3:  # another send wanted after three: say how to count exactly instead
            return reply, request, refusal or probed
        request = dataclasses.replace(request, max_tokens=limit)
        body = encode(request)


def _prompt_tokens(raw: bytes) -> int | None:
    try:
        tokens = orjson.loads(raw)["usage"]["prompt_tokens"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def refusal_completion(request: Request, refusal: ContextRefusal, latency: float) -> Completion:
    """A context-length refusal: the prompt's input_overflow verdict (App. D.1), or, where the
    provider's count cannot tell, a failure that says how to count exactly."""
    if refusal.overflows:
        return Completion(request.id, context_refusal=f"HTTP 400: {refusal.message}"[:1000], latency_s=latency,
                          max_tokens=request.max_tokens)
    return Completion(request.id, latency_s=latency, error=(
        f"HTTP 400: {refusal.message[:300]} (the prompt may fit: count its tokens exactly with model.tokenizer, or "
        "model.server_tokenize=true on a vllm server, so the output limit leaves it room)"))
