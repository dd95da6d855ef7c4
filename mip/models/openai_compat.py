"""Any OpenAI-compatible chat-completions server: OpenRouter, Google's OpenAI-compatible
Gemini endpoint, ``vllm serve``, ``transformers serve``.

Requests go out on an event loop that runs in the caller's thread whenever it waits for a
completion, at most ``max_concurrency`` at a time, and completions are handed back as each
one finishes. The runner's requests are pulled one by one as slots free up, so the next
prompt is built while earlier ones are in flight.

Two transports (``model.transport``):

- ``aiohttp`` (default): mip's own lean client. Each body is JSON-encoded once (orjson) and
  posted on a pooled aiohttp connection. It retries what the ``openai`` SDK retries — HTTP
  408, 409, 429 and 5xx, dropped connections, timeouts — up to ``client_max_retries``
  times, waiting what the server asks (``retry-after-ms``, ``Retry-After`` in seconds or as
  a date, up to 60 s) or else 0.5 s doubling to 8 s, less up to 25 % jitter; it honours
  ``x-should-retry`` and the proxy variables (``HTTPS_PROXY``, ``NO_PROXY``, …). Its CPU
  cost per request is a fraction of the SDK's (benchmarks/RESULTS.md), which is what lets
  one process keep hundreds of long requests in flight.
- ``openai``: the ``openai`` SDK's async client with its own retries, for comparison or for
  a server whose quirks only the SDK handles.

Each request has its own timeout, so a stalled request fails alone. Whatever still fails —
including an HTTP 200 whose body carries an error or no choices — comes back as a
:class:`Completion` with ``error`` set: an infrastructure failure, never a verdict.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import json
import queue
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson
from yarl import URL

import mip
from mip.config import ModelConfig
from mip.models.base import Backend, BackendSetupError, Completion, Request

TRANSPORTS = ("aiohttp", "openai")
RETRY_AFTER_MAX_S = 60.0
BACKOFF_START_S, BACKOFF_MAX_S = 0.5, 8.0


def set_path(body: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_path(b, "reasoning.max_tokens", 5)`` sets ``b["reasoning"]["max_tokens"] = 5``."""
    *parents, leaf = dotted.split(".")
    for key in parents:
        body = body.setdefault(key, {})
    body[leaf] = value


def request_body(cfg: ModelConfig, request: Request, model_id: str | None = None) -> dict[str, Any]:
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
    trace, raw, same = reasoning_of(message)
    usage = response.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    content = message.get("content")
    return Completion(
        request_id,
        text=content if isinstance(content, str) or content is None else json.dumps(content),
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


def proxy_for(url: str | URL) -> dict[str, Any]:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``, …) sets for ``url``, as
    request arguments; read once per session, since aiohttp's ``trust_env`` would look it
    up on every request (about 1 ms of CPU each)."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as e:  # pragma: no cover - openai is a base dependency
        raise BackendSetupError("transport: openai needs `pip install openai`.") from e
    return openai


class _Loop:
    """The backend's event loop.

    It runs in the caller's own thread whenever that thread waits for a completion, so
    nothing is handed between threads: no wake-up pipe written per request, no GIL passed
    back and forth per completion (together about 0.3 ms of CPU per request on a busy
    core). A caller whose thread already runs an event loop (a notebook) cannot run a
    second one there; for it the loop runs in a daemon thread instead.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._waiter: asyncio.Future | None = None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._thread = threading.Thread(target=self.loop.run_forever, name="mip-http", daemon=True)
        self._thread.start()

    def start(self, coro: Any, finished: queue.SimpleQueue) -> asyncio.Future | concurrent.futures.Future:
        """Schedule ``coro``; its future goes into ``finished`` when it is done."""
        if self._thread is not None:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            future.add_done_callback(finished.put)
            return future

        def done(task: asyncio.Future) -> None:
            finished.put(task)
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(None)

        task = self.loop.create_task(coro)
        task.add_done_callback(done)
        return task

    def turn(self) -> None:
        """In the caller's thread, run the loop once without blocking: what is ready goes out."""
        if self._thread is None:
            self.loop.call_soon(self.loop.stop)
            self.loop.run_forever()

    def next_done(self, finished: queue.SimpleQueue) -> asyncio.Future | concurrent.futures.Future:
        """The next finished future, waiting for one if none is. In the caller's thread the
        loop always turns once first, so requests taken meanwhile go out and replies that
        arrived are read even while finished ones are still queued."""
        if self._thread is not None:
            return finished.get()
        while True:  # more than one turn only when another generator's request finished first
            waiter = self._waiter = self.loop.create_future()
            if not finished.empty():
                waiter.set_result(None)  # one turn of the loop, without blocking
            try:
                self.loop.run_until_complete(waiter)
            finally:
                self._waiter = None
            if not finished.empty():
                return finished.get_nowait()

    def close(self, cleanup: Any) -> None:
        """Cancel what is still running, run ``cleanup`` (closing connections) and close the loop."""

        async def finish() -> None:
            pending = asyncio.all_tasks() - {asyncio.current_task()}
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=30)
            await cleanup

        try:
            if self._thread is None:
                self.loop.run_until_complete(finish())
            else:
                asyncio.run_coroutine_threadsafe(finish(), self.loop).result(timeout=30)
        except Exception:  # noqa: BLE001 - closing connections must never fail a finished job
            pass
        if self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            if self._thread.is_alive():
                return
        self.loop.close()


class OpenAICompatBackend(Backend):

    def __init__(self, cfg: ModelConfig, api_key: str | None):
        if not cfg.base_url:
            raise BackendSetupError(f"Model {cfg.name!r} uses openai_compat: set model.base_url.")
        if cfg.transport not in TRANSPORTS:
            raise BackendSetupError(f"Model {cfg.name!r}: unknown transport {cfg.transport!r}; choose {' or '.join(TRANSPORTS)}.")
        self.cfg = cfg
        self._api_key = api_key or "EMPTY"
        self._tokenizer: Any = None
        self.model_id = None if cfg.model_id == "auto" else cfg.model_id
        self._root = cfg.base_url.rstrip("/")  # the API root, …/v1
        self._loop: _Loop | None = None
        # Made inside the event loop on first use: the HTTP session (or SDK client) and the gate.
        self._client: Any = None
        self._gate: asyncio.Semaphore | None = None
        self._proxy: dict[str, Any] = {}

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatBackend({self.cfg.name!r}, {self.cfg.base_url!r})"

    def check(self) -> None:
        """Before the first call: the server answers and serves this model id.

        ``model_id: auto`` takes the one model a single-model server lists.
        """
        request = urllib.request.Request(f"{self._root}/models", headers={
            "Authorization": f"Bearer {self._api_key}", "User-Agent": f"mip/{mip.__version__}"})
        try:
            with urllib.request.build_opener().open(request, timeout=30) as response:  # proxies as set now
                listing = orjson.loads(response.read())
        except urllib.error.HTTPError as e:
            if e.code in (401, 403):
                raise BackendSetupError(f"{self.cfg.base_url} refused the API key from ${self.cfg.api_key_env}: "
                                        f"HTTP {e.code} {error_message(e.read())}") from None
            listing = None  # a server without /models: the first request will tell
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise BackendSetupError(f"Cannot reach {self.cfg.base_url} for model {self.cfg.name!r}: {reason}.") from None
        except orjson.JSONDecodeError:
            listing = None
        data = listing.get("data") if isinstance(listing, dict) else None
        served = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)] if isinstance(data, list) else []
        if self.model_id is None:
            if len(served) != 1:
                raise BackendSetupError(f"model_id: auto needs a server that lists one model at {self._root}/models; "
                                        f"{self.cfg.base_url} lists {served}. Set model.model_id.")
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
        root = self._root.removesuffix("/v1")
        if self.model_id is None:
            self.check()
        counts = []
        for prompt in prompts:
            body = json.dumps({"model": self.model_id, "messages": [{"role": "user", "content": prompt}],
                               "add_generation_prompt": True}).encode()
            request = urllib.request.Request(f"{root}/tokenize", data=body, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"})
            try:
                with urllib.request.build_opener().open(request, timeout=120) as response:
                    counts.append(int(json.loads(response.read())["count"]))
            except (OSError, ValueError, KeyError) as e:
                raise BackendSetupError(f"Counting tokens with {root}/tokenize failed ({e}); unset model.server_tokenize "
                                        "to estimate them instead.") from e
        return counts

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        """Completions as they finish. Requests are pulled (and their bodies encoded) in the
        caller's thread only while fewer than ``max_concurrency`` plus a small lead are
        unfinished, so prompts are built while earlier requests are in flight."""
        if self.model_id is None:
            self.check()
        if self._loop is None:
            self._loop = _Loop()
        lead = self.cfg.max_concurrency + max(2, self.cfg.max_concurrency // 4)
        finished: queue.SimpleQueue = queue.SimpleQueue()
        source = iter(requests)
        running: set = set()
        refused: list[Completion] = []
        try:
            while True:
                while len(running) < lead and (request := next(source, None)) is not None:
                    try:
                        body = self._encode(request)
                    except (TypeError, ValueError) as e:  # it cannot be sent as it is: fails alone
                        refused.append(Completion(request.id, error=f"the request cannot be encoded: {e}"))
                        continue
                    running.add(self._loop.start(self._call(request, body), finished))
                    if len(running) <= self.cfg.max_concurrency:  # ramping up: send it now, not after the rest are built
                        self._loop.turn()
                while refused:
                    yield refused.pop()
                if not running:
                    return
                future = self._loop.next_done(finished)
                running.discard(future)
                yield future.result()
        finally:  # the consumer stopped early (an error of its own): drop what is still in flight
            for future in running:
                future.cancel()

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close(self._shutdown())
        self._loop = self._client = self._gate = None

    async def _shutdown(self) -> None:
        if self._client is not None:
            await self._client.close()

    def _encode(self, request: Request) -> Any:
        body = request_body(self.cfg, request, self.model_id)
        return body if self.cfg.transport == "openai" else orjson.dumps(body)

    async def _call(self, request: Request, body: Any) -> Completion:
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.cfg.max_concurrency)
        async with self._gate:
            start = time.perf_counter()
            try:
                if self.cfg.transport == "openai":
                    return await self._call_sdk(request, body, start)
                return await self._post(request, body, start)
            except Exception as e:  # noqa: BLE001 - whatever the transport raises is infrastructure
                return Completion(request.id, error=f"{type(e).__name__}: {str(e)[:500]}",
                                  latency_s=time.perf_counter() - start)

    def _session(self) -> Any:
        if self._client is None:
            import aiohttp

            self._client = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.cfg.max_concurrency),
                headers={"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json",
                         "User-Agent": f"mip/{mip.__version__}"},
                timeout=aiohttp.ClientTimeout(total=self.cfg.request_timeout_s),
            )
            self._url = URL(f"{self._root}/chat/completions")  # parsed once, not per request
            self._proxy = proxy_for(self._url)
        return self._client

    async def _post(self, request: Request, body: bytes, start: float) -> Completion:
        import aiohttp

        session = self._session()
        error = ""
        for retry in range(self.cfg.client_max_retries + 1):
            delay: float | None = None
            try:
                async with session.post(self._url, data=body, **self._proxy) as response:
                    raw = await response.read()
                    status, headers = response.status, response.headers
            except TimeoutError:
                error = f"no answer within the request timeout ({self.cfg.request_timeout_s:g} s)"
            except aiohttp.ClientError as e:
                error = f"{type(e).__name__}: {str(e)[:300]}"
            else:
                latency = time.perf_counter() - start
                if status == 200:
                    try:
                        return completion_from(request.id, orjson.loads(raw), latency)
                    except orjson.JSONDecodeError:
                        return Completion(request.id, error=f"a 200 response that is not JSON ({len(raw)} bytes)", latency_s=latency)
                error = f"HTTP {status}: {error_message(raw)}"
                if not should_retry(status, headers):  # the request itself is refused; the same one fails again
                    return Completion(request.id, error=error, latency_s=latency)
                delay = retry_delay(headers, retry)
            if retry < self.cfg.client_max_retries:
                await asyncio.sleep(retry_delay({}, retry) if delay is None else delay)
        return Completion(request.id, error=error, latency_s=time.perf_counter() - start)

    async def _call_sdk(self, request: Request, body: dict[str, Any], start: float) -> Completion:
        openai = _import_openai()
        if self._client is None:
            self._client = openai.AsyncOpenAI(base_url=self.cfg.base_url, api_key=self._api_key,
                                              max_retries=self.cfg.client_max_retries, timeout=self.cfg.request_timeout_s)
        named = {"model": body.pop("model"), "messages": body.pop("messages")}
        try:
            response = await self._client.chat.completions.create(**named, extra_body=body)
        except openai.APIStatusError as e:
            body = e.body.get("error", e.body) if isinstance(e.body, dict) else None
            message = body.get("message") if isinstance(body, dict) and body.get("message") else e.message
            return Completion(request.id, error=f"HTTP {e.status_code}: {message}", latency_s=time.perf_counter() - start)
        return completion_from(request.id, response.model_dump(), time.perf_counter() - start)
