"""Any OpenAI-compatible chat-completions server: OpenRouter, Google's OpenAI-compatible
Gemini endpoint, ``vllm serve``, ``transformers serve``.

Requests run on the ``openai`` async client in a background event loop, at most
``max_concurrency`` at a time; completions are handed back as each one finishes. The
client's own retries cover 429/5xx, connection errors and timeouts (honouring
``Retry-After``); each request has its own timeout, so a stalled request fails alone.
Whatever still fails — including an HTTP 200 whose body carries an error — comes back
as a :class:`Completion` with ``error`` set: an infrastructure failure, never a verdict.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from mip.config import ModelConfig
from mip.models.base import Backend, BackendSetupError, Completion, Request


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as e:  # pragma: no cover - openai is a base dependency
        raise BackendSetupError("The openai_compat backend needs `pip install openai`.") from e
    return openai


def set_path(body: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_path(b, "reasoning.max_tokens", 5)`` sets ``b["reasoning"]["max_tokens"] = 5``."""
    *parents, leaf = dotted.split(".")
    for key in parents:
        body = body.setdefault(key, {})
    body[leaf] = value


def request_kwargs(cfg: ModelConfig, request: Request, model_id: str | None = None) -> dict[str, Any]:
    """The chat-completions arguments of one request (pure; tested directly)."""
    extra: dict[str, Any] = {**cfg.extra_body}
    if cfg.provider.order:
        extra["provider"] = {
            "order": list(cfg.provider.order),
            "allow_fallbacks": cfg.provider.allow_fallbacks,
            "require_parameters": cfg.provider.require_parameters,
            **({"quantizations": list(cfg.provider.quantizations)} if cfg.provider.quantizations else {}),
        }
    if cfg.reasoning:
        extra["reasoning"] = {**cfg.reasoning}
    if cfg.chat_template_kwargs:
        extra["chat_template_kwargs"] = {**cfg.chat_template_kwargs}
    if cfg.budget_split.answer_tokens is not None:
        reasoning_tokens = request.max_tokens - cfg.budget_split.answer_tokens
        if reasoning_tokens < 1:
            raise ValueError(f"Budget {request.max_tokens} leaves no reasoning tokens after {cfg.budget_split.answer_tokens} answer tokens.")
        set_path(extra, cfg.budget_split.reasoning_field, reasoning_tokens)
    kwargs: dict[str, Any] = {
        "model": model_id or cfg.model_id,
        "messages": [{"role": "user", "content": request.prompt}],
        "temperature": 0.0,
        cfg.max_tokens_param: request.max_tokens,
        "timeout": cfg.request_timeout_s,
    }
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _dump(obj: Any) -> Any:
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


def _field(obj: Any, name: str) -> Any:
    """A field the SDK may not model (``reasoning``, ``provider``, ``error``): attribute or extra."""
    value = getattr(obj, name, None)
    if value is None:
        value = (getattr(obj, "model_extra", None) or {}).get(name)
    return value


def reasoning_of(message: Any) -> tuple[str | None, dict[str, Any]]:
    """The reasoning trace and every reasoning field verbatim.

    Servers put it in ``reasoning`` (current vLLM, OpenRouter), ``reasoning_content``
    (older vLLM, others) or OpenRouter's ``reasoning_details`` (text and summary
    kinds). The trace is the first of these present; all are kept as returned.
    """
    raw: dict[str, Any] = {}
    for name in ("reasoning", "reasoning_content", "reasoning_details"):
        value = _field(message, name)
        if value not in (None, "", []):
            raw[name] = [_dump(v) for v in value] if isinstance(value, list) else value
    trace = raw.get("reasoning") or raw.get("reasoning_content")
    if not trace and raw.get("reasoning_details"):
        parts = []
        for detail in raw["reasoning_details"]:
            if isinstance(detail, dict):
                parts.append(detail.get("text") or detail.get("summary") or "")
        trace = "\n".join(p for p in parts if p) or None
    return (trace if isinstance(trace, str) else None), raw


def completion_from(request_id: str, response: Any, latency: float) -> Completion:
    """A Completion from a chat-completions response, or one with ``error`` set when the
    body reports an error (some servers answer HTTP 200 with ``{"error": …}``)."""
    error = _field(response, "error")
    choices = getattr(response, "choices", None) or []
    if error or not choices:
        return Completion(request_id, error=f"error in a 200 response: {error or 'no choices'}", latency_s=latency)
    choice = choices[0]
    choice_error = _field(choice, "error")
    if choice_error or choice.finish_reason == "error":
        return Completion(request_id, error=f"error in the choice: {choice_error}", latency_s=latency)
    message = choice.message
    trace, raw = reasoning_of(message)
    usage = _dump(response.usage) if response.usage is not None else {}
    details = (usage or {}).get("completion_tokens_details") or {}
    return Completion(
        request_id,
        text=message.content,
        reasoning=trace,
        reasoning_raw=raw,
        finish_reason=choice.finish_reason,
        prompt_tokens=(usage or {}).get("prompt_tokens"),
        completion_tokens=(usage or {}).get("completion_tokens"),
        reasoning_tokens=details.get("reasoning_tokens") if isinstance(details, dict) else None,
        latency_s=latency,
        usage=usage or {},
        provider=_field(response, "provider"),
        served_model=getattr(response, "model", None),
    )


class OpenAICompatBackend(Backend):
    deterministic = False

    def __init__(self, cfg: ModelConfig, api_key: str | None):
        if not cfg.base_url:
            raise BackendSetupError(f"Model {cfg.name!r} uses openai_compat: set model.base_url.")
        self.cfg = cfg
        self._api_key = api_key or "EMPTY"
        self._tokenizer: Any = None
        self.model_id = None if cfg.model_id == "auto" else cfg.model_id

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatBackend({self.cfg.name!r}, {self.cfg.base_url!r})"

    # ------------------------------------------------------------------ client
    def _client(self) -> Any:
        openai = _import_openai()
        http_client = None
        if self.cfg.http_client == "aiohttp":
            try:
                http_client = openai.DefaultAioHttpClient()
            except Exception:  # noqa: BLE001 - the aiohttp extra is optional
                http_client = None
        return openai.AsyncOpenAI(
            base_url=self.cfg.base_url,
            api_key=self._api_key,
            max_retries=self.cfg.client_max_retries,
            timeout=self.cfg.request_timeout_s,
            http_client=http_client,
        )

    def check(self) -> None:
        """Before the first call: the server answers and serves this model id.

        ``model_id: auto`` takes the one model a single-model server lists.
        """
        openai = _import_openai()
        client = openai.OpenAI(base_url=self.cfg.base_url, api_key=self._api_key, max_retries=1, timeout=30)
        try:
            served = [m.id for m in client.models.list()]
        except openai.APIConnectionError as e:
            raise BackendSetupError(f"Cannot reach {self.cfg.base_url} for model {self.cfg.name!r}: {e}.") from e
        except openai.AuthenticationError as e:
            raise BackendSetupError(
                f"{self.cfg.base_url} refused the API key from ${self.cfg.api_key_env}: {e.message}"
            ) from e
        except openai.APIStatusError:
            return  # a server without /models: the first request will tell
        finally:
            client.close()
        if self.model_id is None:
            if len(served) != 1:
                raise BackendSetupError(f"model_id: auto needs a server with one model; {self.cfg.base_url} serves {served}.")
            self.model_id = served[0]
        elif served and self.model_id not in served:
            shown = ", ".join(sorted(served)[:50]) + (" …" if len(served) > 50 else "")
            raise BackendSetupError(
                f"{self.cfg.base_url} does not serve {self.cfg.model_id!r} (model {self.cfg.name!r}). It serves: {shown}"
            )

    # ------------------------------------------------------------------ tokens
    def count_tokens(self, prompts: Sequence[str]) -> list[int] | None:
        """Counted with ``model.tokenizer`` where it loads, else with the server's
        ``/tokenize`` endpoint where ``server_tokenize`` is set; else None (the runner estimates)."""
        if self.cfg.server_tokenize and not self.cfg.tokenizer:
            return self._server_counts(prompts)
        if not self.cfg.tokenizer or self._tokenizer is False:
            return None
        if self._tokenizer is None:
            try:
                from transformers import AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(self.cfg.tokenizer)
            except Exception:  # noqa: BLE001 - no transformers or no tokenizer offline: estimate
                self._tokenizer = False
                return None
        texts = [
            self._tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
            for p in prompts
        ]
        return [len(ids) for ids in self._tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def _server_counts(self, prompts: Sequence[str]) -> list[int]:
        import json
        import urllib.request

        root = self.cfg.base_url.rstrip("/").removesuffix("/v1")
        if self.model_id is None:
            self.check()
        counts = []
        for prompt in prompts:
            body = json.dumps({"model": self.model_id, "messages": [{"role": "user", "content": prompt}],
                               "add_generation_prompt": True}).encode()
            request = urllib.request.Request(f"{root}/tokenize", data=body, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"})
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    counts.append(int(json.loads(response.read())["count"]))
            except (OSError, ValueError, KeyError) as e:
                raise BackendSetupError(f"Counting tokens with {root}/tokenize failed ({e}); unset model.server_tokenize "
                                        "to estimate them instead.") from e
        return counts

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[Request]) -> Iterator[Completion]:
        if not requests:
            return
        if self.model_id is None:
            self.check()
        results: queue.Queue[Completion | BaseException] = queue.Queue()
        thread = threading.Thread(target=lambda: asyncio.run(self._run_all(requests, results)), daemon=True)
        thread.start()
        for _ in range(len(requests)):
            item = results.get()
            if isinstance(item, BaseException):
                raise item
            yield item
        thread.join()

    async def _run_all(self, requests: Sequence[Request], results: queue.Queue) -> None:
        try:
            client = self._client()
        except BaseException as e:  # noqa: BLE001 - handed to the consumer thread
            results.put(e)
            return
        gate = asyncio.Semaphore(self.cfg.max_concurrency)

        async def one(request: Request) -> None:
            async with gate:  # build the payload only when a slot is free
                results.put(await self._one(client, request))

        try:
            await asyncio.gather(*(one(r) for r in requests))
        finally:
            await client.close()

    async def _one(self, client: Any, request: Request) -> Completion:
        openai = _import_openai()
        start = time.perf_counter()
        try:
            response = await client.chat.completions.create(**request_kwargs(self.cfg, request, self.model_id))
        except openai.BadRequestError as e:
            # The server refused the request itself (e.g. prompt over its limit): the same
            # request would fail again, but it is still not a model verdict.
            return Completion(request.id, error=f"HTTP 400: {e.message}", latency_s=time.perf_counter() - start)
        except Exception as e:  # noqa: BLE001 - whatever the transport raises is infrastructure
            return Completion(request.id, error=f"{type(e).__name__}: {str(e)[:500]}", latency_s=time.perf_counter() - start)
        return completion_from(request.id, response, time.perf_counter() - start)
