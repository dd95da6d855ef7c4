"""Local servers that answer as real providers' documented endpoints do, built on
:class:`tests.fake_server.FakeServer`'s correct answers to the arithmetic task.

- :class:`GeminiServer` — Google's OpenAI-compatible endpoint,
  https://ai.google.dev/gemini-api/docs/openai (base URL ``…/v1beta/openai/``): ``GET /models``
  lists ids as ``models/gemini-…`` while chat requests take the bare id; thinking is asked
  for with ``"extra_body": {"google": {"thinking_config": {"include_thoughts": true}}}`` in the
  JSON body, and the thought summary then comes back inline at the start of
  ``message.content`` in ``<thought>…</thought>`` (as clients report it);
  a prompt over the window is refused with HTTP 400 and Google's
  error list ``[{"error": {"code": 400, "message": "The input token count (P) exceeds the
  maximum number of tokens allowed (N).", "status": "INVALID_ARGUMENT"}}]``. Gemini's window
  holds the input alone.
- :class:`RefusingServer` — a window over prompt + output, refused in the words of
  ``openrouter`` (https://openrouter.ai/docs/api-reference/errors: "This endpoint's maximum context length is N
  tokens. However, you requested about M tokens (P of text input, K in the output) …") or
  ``vllm`` (the current vLLM server: "This model's maximum context length is N tokens.
  However, you requested K output tokens and your prompt contains at least N-K+1 input
  tokens, for a total of at least N+1 tokens. …"; its count stops where the window is
  passed). Its ``usage.prompt_tokens`` is the exact count. ``openrouter_wrapped``: OpenRouter
  passing on a provider's refusal, HTTP 400 ``{"error": {"code": 400, "message": "Provider
  returned error", "metadata": {"provider_name": …, "raw": <the provider's body>}}}``
  (https://openrouter.ai/docs/api-reference/errors, ProviderErrorMetadata, read 2026-12-04),
  here a vLLM-served provider's older wording with exact counts ("… you requested T tokens
  (P in the messages, K in the completion) …").

Both count a prompt as ``len(prompt) // 2`` tokens: denser than mip's estimate of 3.5
characters per token, as real tokenizers often are (an NER prompt: 27K tokens estimated, 36.6K counted).
"""

from __future__ import annotations

import json

from .fake_server import FakeServer

THOUGHT = "The instances: 3 even, 7 odd. Odd is the majority."


def tokens(prompt: str) -> int:
    return len(prompt) // 2


class GeminiServer(FakeServer):
    MODELS = ("models/gemini-3.1-pro-preview", "models/gemini-3.1-flash-lite-preview", "models/text-embedding-004")

    def __init__(self, window: int = 1_048_576):
        super().__init__()
        self.window = window

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1beta/openai/"

    async def route(self, method: str, path: str, body: bytes, writer, reader=None) -> bool:
        if method == "GET" and path.endswith("/models"):
            listing = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "google"} for m in self.MODELS]}
            await self._send(writer, 200, json.dumps(listing).encode())
            return True
        return await super().route(method, path, body, writer, reader)

    async def _answer(self, fault, request: dict, prompt: str, writer) -> bool:
        if tokens(prompt) > self.window:
            message = f"The input token count ({tokens(prompt)}) exceeds the maximum number of tokens allowed ({self.window})."
            await self._send(writer, 400, json.dumps([{"error": {"code": 400, "message": message,
                                                                 "status": "INVALID_ARGUMENT"}}]).encode())
            return True
        reply = self._completion(request, prompt)
        message = reply["choices"][0]["message"]
        message.pop("reasoning", None)  # Google's endpoint has no reasoning field
        thinking = request.get("extra_body", {}).get("google", {}).get("thinking_config", {})
        if thinking.get("include_thoughts"):
            message["content"] = f"<thought>{THOUGHT}</thought>{message['content']}"
        reply.pop("provider")
        reply["model"] = request["model"]  # the id asked, bare (the listing's, without models/)
        reply["usage"] = {"prompt_tokens": tokens(prompt), "completion_tokens": 40, "total_tokens": tokens(prompt) + 40}
        await self._send(writer, 200, json.dumps(reply).encode())
        self._paid(prompt)
        return True


class RefusingServer(FakeServer):
    def __init__(self, provider: str, window: int, model: str = "openai/gpt-oss-120b"):
        super().__init__(model=model)
        self.provider, self.window = provider, window

    async def _answer(self, fault, request: dict, prompt: str, writer) -> bool:
        n, k, w = tokens(prompt), request.get("max_tokens") or request.get("max_completion_tokens"), self.window
        if n + k > w:
            if self.provider == "openrouter_wrapped":
                inner = (f"This model's maximum context length is {w} tokens. However, you requested {n + k} tokens "
                         f"({n} in the messages, {k} in the completion). Please reduce the length of the messages or "
                         "completion.")
                raw = json.dumps({"object": "error", "message": inner, "type": "BadRequestError", "param": None, "code": 400})
                await self._send(writer, 400, json.dumps({"error": {"code": 400, "message": "Provider returned error",
                                                                    "metadata": {"provider_name": "DeepInfra", "raw": raw}}}).encode())
                return True
            if self.provider == "openrouter":
                message = (f"This endpoint's maximum context length is {w} tokens. However, you requested about {n + k} "
                           f"tokens ({n} of text input, {k} in the output). Please reduce the length of either one, or "
                           'use the "middle-out" transform to compress your prompt automatically.')
            else:
                seen = min(n, w - k + 1)  # vLLM tokenises no further than the window needs
                message = (f"This model's maximum context length is {w} tokens. However, you requested {k} output tokens "
                           f"and your prompt contains at least {seen} input tokens, for a total of at least {seen + k} "
                           "tokens. Please reduce the length of the input prompt or the number of requested output "
                           f"tokens. (parameter=input_tokens, value={seen})")
            await self._send(writer, 400, json.dumps({"error": {"message": message, "type": "BadRequestError",
                                                                "param": "input_tokens", "code": 400}}).encode())
            return True
        reply = self._completion(request, prompt)
        reply["usage"]["prompt_tokens"] = n
        await self._send(writer, 200, json.dumps(reply).encode())
        self._paid(prompt)
        return True
