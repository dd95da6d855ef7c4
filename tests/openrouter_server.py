"""A local server that routes and refuses as OpenRouter documents it, for the preflight tests.

What it reproduces, and where it is documented:

- The ``provider`` object — ``order``, ``allow_fallbacks`` (default true), ``require_parameters``
  ("only use providers that support all parameters in your request", default false):
  https://openrouter.ai/docs/features/provider-routing (read 2026-12-02).
- Error bodies ``{"error": {"code": N, "message": …}}`` with the HTTP status equal to the code;
  400 for invalid parameters, 401 for an invalid or disabled key: https://openrouter.ai/docs/errors.
- A request no endpoint can serve — ``require_parameters`` excluding every provider, or a
  provider whose output limit is below ``max_tokens`` — is refused with 404 "No endpoints found
  that can handle the requested parameters. To learn more about provider routing, visit:
  https://openrouter.ai/docs/provider-routing" (the message clients report in their issues, e.g.
  github.com/lastmile-ai/mcp-agent/issues/237 for its tool-use variant).
- A provider name in ``order`` that OpenRouter does not know: 400 (invalid parameter).
- Replies name the serving ``provider`` at the top level; reasoning comes back in
  ``message.reasoning`` and ``message.reasoning_details``; ``usage`` carries
  ``completion_tokens_details.reasoning_tokens`` and ``cost`` (https://openrouter.ai/docs/use-cases/reasoning-tokens,
  /docs/use-cases/usage-accounting).
- ``reasoning.max_tokens`` is passed to the provider's thinking budget; whether ``max_tokens``
  then also bounds the reasoning is each provider's rule (``counts_reasoning`` below).

With ``google=True`` a wrong key is refused as Google's OpenAI-compatible Gemini endpoint refuses
it: HTTP 400, a one-element list ``[{"error": {"code": 400, "message": "API key not valid. Please
pass a valid API key.", "status": "INVALID_ARGUMENT", …}}]`` (as clients of
generativelanguage.googleapis.com/v1beta/openai report it: github.com/continuedev/continue/issues/8516;
the same error object, unlisted, in google/timesketch#3703).

``refuse=(status, message)`` answers every chat request with that documented error
(https://openrouter.ai/docs/api-reference/errors, read 2026-12-04: 400 "Bad Request (invalid or
missing params, CORS)", 401 "Invalid credentials (OAuth session expired, disabled/invalid API key)",
402 "Your account or API key has insufficient credits. Add more credits and retry the request.",
429 "You are being rate limited"), with ``Retry-After: retry_after`` seconds when given. Every
request it gets, ``GET /models`` included, is counted in ``requests``.

With ``pricing={"prompt": "…", "completion": "…"}`` the model listing (``GET /models``, answered
without a key) gives the model that ``pricing`` object, USD per token as strings
(https://openrouter.ai/docs/api-reference/list-available-models).

``refuse_models={model id: (status, message)}`` refuses only that model's chat requests (one model of a
sweep refused, the others answered), and ``also_list`` adds model ids to the listing. ``error_body=(code,
message)`` answers every chat request with HTTP 200 and that error object in the body, as OpenRouter does
for an error met once the model started processing the request ("Otherwise, the returned HTTP response
status will be 200 and any error occurred while the LLM is producing the output will be emitted in the
response body", https://openrouter.ai/docs/api/reference/errors-and-debugging, read 2026-12-06). ``cost_as`` sends ``usage.cost`` as that JSON type (``str``: ``"0.0004"``).

``delay`` seconds pass before each chat request is answered (a slow refusal); with ``gather=N``
a chat request is held until N are in flight at once (or ``delay`` passes), and ``peak_before_reply``
is the most chat requests in flight before the server sent its first chat reply (since
:meth:`reset_peak`): how many a client sends without waiting for a reply, counted at the server.

The "model" wants to think ``think_tokens`` tokens and then answer ``answer_tokens`` tokens.
"""

from __future__ import annotations

import asyncio
import json

from .local_server import LocalServer

ROUTING_KEYS = {"model", "messages", "provider", "stream", "usage"}


class Provider:
    """``rejects``: parameters this provider refuses although OpenRouter routes them to it (with
    ``require_parameters: false``), each with the provider's message; OpenRouter passes the refusal
    on as HTTP 400 "Provider returned error" with the provider's body in ``error.metadata.raw``
    (https://openrouter.ai/docs/api-reference/errors). ``reasoning``: whether replies carry it;
    ``usage``: whether replies carry ``usage`` at all (with ``cost``, usage accounting)."""

    def __init__(self, params: set[str], max_output: int = 100_000, counts_reasoning: bool = True,
                 rejects: dict[str, str] | None = None, reasoning: bool = True, cost: float | None = 0.0004):
        self.params, self.max_output, self.counts_reasoning = params, max_output, counts_reasoning
        self.rejects, self.reasoning, self.cost = rejects or {}, reasoning, cost


class OpenRouterServer(LocalServer):
    def __init__(self, providers: dict[str, Provider], key: str = "sk-or-test", model: str = "openai/gpt-oss-120b",
                 think_tokens: int = 3000, answer_tokens: int = 400, inline_thoughts: bool = False, google: bool = False,
                 refuse: tuple[int, str] | None = None, retry_after: int | None = None, delay: float = 0.0,
                 gather: int | None = None, pricing: dict[str, str] | None = None,
                 refuse_models: dict[str, tuple[int, str]] | None = None, also_list: tuple[str, ...] = (),
                 error_body: tuple[int, str] | None = None, cost_as: type = float):
        super().__init__()
        self.refuse_models, self.also_list, self.error_body, self.cost_as = refuse_models or {}, also_list, error_body, cost_as
        self.chats_by_model: dict[str, int] = {}
        self.pricing = pricing
        self.refuse, self.retry_after, self.requests = refuse, retry_after, 0
        self.delay, self.gather = delay, gather
        self.in_flight, self.peak_before_reply, self._replied = 0, 0, False
        self.google = google
        self.providers, self.key, self.model = providers, key, model
        self.think_tokens, self.answer_tokens, self.inline_thoughts = think_tokens, answer_tokens, inline_thoughts
        self.bodies: list[dict] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    async def _send(self, writer, status: int, payload: dict | list, extra: str = "") -> None:
        raw = json.dumps(payload).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {len(raw)}\r\n\r\n".encode() + raw)
        await writer.drain()

    async def route(self, method: str, path: str, body: bytes, writer, reader=None) -> bool:
        self.requests += 1
        if method == "GET" and path.endswith("/models"):
            await self._send(writer, 200, {"data": [{"id": m, **({"pricing": self.pricing} if self.pricing else {})}
                                                     for m in (self.model, *self.also_list)]})
            return True
        headers = self.headers_seen[-1]
        request = json.loads(body)
        self.bodies.append(request)
        self.chats_by_model[request.get("model")] = self.chats_by_model.get(request.get("model"), 0) + 1
        self.in_flight += 1
        try:
            if not self._replied:
                self.peak_before_reply = max(self.peak_before_reply, self.in_flight)
            await self._hold()
            self._replied = True
            return await self._chat(request, headers, writer)
        finally:
            self.in_flight -= 1

    def reset_peak(self) -> None:
        """Count ``peak_before_reply`` afresh: the next chat reply is again the first."""
        self.peak_before_reply, self._replied = 0, False

    async def _hold(self) -> None:
        """Wait ``delay`` seconds, or with ``gather`` until that many are in flight (at most ``delay``)."""
        waited = 0.0
        while waited < self.delay and not (self.gather and self.in_flight >= self.gather):
            await asyncio.sleep(0.02)
            waited += 0.02

    async def _chat(self, request: dict, headers: dict, writer) -> bool:
        if self.error_body:
            code, message = self.error_body
            await self._send(writer, 200, {"id": "gen-1", "object": "chat.completion", "choices": [],
                                           "error": {"code": code, "message": message}})
            return True
        if self.refuse or request.get("model") in self.refuse_models:
            status, message = self.refuse or self.refuse_models[request["model"]]
            await self._send(writer, status, {"error": {"code": status, "message": message}},
                             f"Retry-After: {self.retry_after}\r\n" if self.retry_after is not None else "")
            return True
        if headers.get("authorization") != f"Bearer {self.key}" and self.google:
            await self._send(writer, 400, [{"error": {
                "code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}])
            return True
        if headers.get("authorization") != f"Bearer {self.key}":
            await self._send(writer, 401, {"error": {"code": 401, "message": "Invalid credentials"}})
            return True
        status, payload = self._answer(request)
        await self._send(writer, status, payload)
        return True

    def _answer(self, request: dict) -> tuple[int, dict]:
        routing = request.get("provider") or {}
        order = routing.get("order") or []
        unknown = [name for name in order if name not in self.providers]
        if unknown:
            return 400, {"error": {"code": 400, "message": f"Invalid provider(s) in provider.order: {', '.join(unknown)}"}}
        names = order if order and routing.get("allow_fallbacks") is False else [*order, *self.providers]
        wanted = set(request) - ROUTING_KEYS
        limit = request.get("max_tokens") or request.get("max_completion_tokens") or 0
        usable = [n for n in names if self.providers[n].max_output >= limit
                  and (not routing.get("require_parameters") or wanted <= self.providers[n].params)]
        if not usable:
            return 404, {"error": {"code": 404, "message": "No endpoints found that can handle the requested parameters. "
                                   "To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing"}}
        chosen = self.providers[usable[0]]
        for param, message in chosen.rejects.items():
            if param in request:  # OpenAI's own words, e.g. for temperature on the GPT-5 family
                raw = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": param,
                                            "code": "unsupported_value"}})
                return 400, {"error": {"code": 400, "message": "Provider returned error",
                                       "metadata": {"provider_name": usable[0], "raw": raw}}}
        return 200, self._completion(usable[0], request, limit)

    def _completion(self, name: str, request: dict, limit: int) -> dict:
        provider = self.providers[name]
        budget = (request.get("reasoning") or {}).get("max_tokens") or self.think_tokens
        reasoning = min(self.think_tokens, budget)
        answer, finish = self.answer_tokens, "stop"
        if provider.counts_reasoning and reasoning + answer > limit:
            reasoning = min(reasoning, limit)
            answer, finish = limit - reasoning, "length"
        elif not provider.counts_reasoning and answer > limit:
            answer, finish = limit, "length"
        trace = "2 is prime. 3 is prime. 4 is not."
        message = {"role": "assistant", "content": "2, 3, 5, 7, 11", "reasoning": trace,
                   "reasoning_details": [{"type": "reasoning.text", "text": trace}]}
        if self.inline_thoughts:
            message = {"role": "assistant", "content": f"<thought>{trace}</thought>2, 3, 5, 7, 11"}
        if not provider.reasoning:
            message = {"role": "assistant", "content": "2, 3, 5, 7, 11"}
        return {"id": "gen-1", "model": request["model"], "provider": name, "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 60, "completion_tokens": reasoning + answer, "total_tokens": 60 + reasoning + answer,
                          "completion_tokens_details": {"reasoning_tokens": reasoning},
                          **({"cost": self.cost_as(provider.cost)} if provider.cost is not None else {})}}
