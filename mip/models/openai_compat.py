"""Any OpenAI-compatible chat-completions server: OpenRouter, Google's OpenAI-compatible
Gemini endpoint, ``vllm serve``, ``transformers serve``.

Requests go out on an event loop that runs in the caller's thread whenever it waits for a
completion, at most ``max_concurrency`` at a time, and completions are handed back as each
one finishes. The runner's requests are pulled one by one as slots free up, so the next
prompt is built while earlier ones are in flight.

Two transports (``model.transport``):

- ``aiohttp`` (default): mip's own lean client. Each body is JSON-encoded once (orjson) and
  posted on a pooled aiohttp connection; the proxy variables (``HTTPS_PROXY``, ``NO_PROXY``,
  …) are read once. Its CPU cost per request is a fraction of the SDK's
  (benchmarks/RESULTS.md), which is what lets one process keep hundreds of long requests in
  flight.
- ``openai``: the ``openai`` SDK's async client, for comparison or for a server whose quirks
  only the SDK handles. Its own retries are off: the rules below apply to both transports.

The rules, in one place (:meth:`OpenAICompatBackend._call`), for both transports:

- **Retries** are the ``openai`` SDK's: HTTP 408, 409, 429 and 5xx, dropped connections and
  timeouts, up to ``client_max_retries`` times, waiting what the server asks
  (``retry-after-ms``, ``Retry-After`` in seconds or as a date, up to 60 s) or else 0.5 s
  doubling to 8 s, less up to 25 % jitter; ``x-should-retry`` decides when sent.
- **Every try has one deadline**, ``request_timeout_s``, over connect, headers and the
  whole body, so a server that stalls or drips bytes fails that try in time.
- **Replies are capped** at ``max_response_bytes``: a larger one is an infrastructure failure.
- **The API key stays with its origin**: redirects are not followed (the key would travel
  with them); a 3xx is an error that names where it pointed. ``check()`` refuses a redirect
  to another origin the same way.

Whatever still fails — including an HTTP 200 whose body carries an error, no choices, or is
no JSON at all — comes back as a :class:`Completion` with ``error`` set: an infrastructure
failure, never a verdict.
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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson
from yarl import URL

import mip
from mip.config import ModelConfig
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request
from mip.models.replies import content_text

TRANSPORTS = ("aiohttp", "openai")
CHECK_DEADLINE_S = 30.0  # the model listing and token counts: one deadline over the whole exchange
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
    return Completion(
        request_id,
        text=content_text(message.get("content"), message.get("refusal")),  # text parts joined, not JSON-encoded
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
    def __init__(self, cfg: ModelConfig, context: BackendContext):
        if not cfg.base_url:
            raise BackendSetupError(f"Model {cfg.name!r} uses openai_compat: set model.base_url.")
        if cfg.transport not in TRANSPORTS:
            raise BackendSetupError(f"Model {cfg.name!r}: unknown transport {cfg.transport!r}; choose {' or '.join(TRANSPORTS)}.")
        self.cfg = cfg
        self._api_key = context.api_key or "EMPTY"
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
        try:
            listing = orjson.loads(self._get(f"{self._root}/models"))
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

    def _get(self, url: str, body: bytes | None = None) -> bytes:
        """One small request of the backend's own (the model listing, token counts): the key
        goes to the configured origin only, and the whole exchange has one deadline."""
        request = urllib.request.Request(url, data=body, headers={
            "Authorization": f"Bearer {self._api_key}", "User-Agent": f"mip/{mip.__version__}",
            **({"Content-Type": "application/json"} if body is not None else {})})
        opener = urllib.request.build_opener(_SameOrigin(url))  # proxies as set now
        limit = min(CHECK_DEADLINE_S, self.cfg.request_timeout_s)
        return _with_deadline(lambda: _read_capped(opener.open(request, timeout=limit), self.cfg.max_response_bytes),
                              limit, f"{url} did not answer completely within {limit:g} s")

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
            try:
                counts.append(int(json.loads(self._get(f"{root}/tokenize", body))["count"]))
            except (OSError, ValueError, KeyError, BackendSetupError) as e:
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
        """One request, with the retry, deadline, size and redirect rules (module docstring)."""
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.cfg.max_concurrency)
        send = self._send_sdk if self.cfg.transport == "openai" else self._send
        async with self._gate:
            start = time.perf_counter()
            error = ""
            for retry in range(self.cfg.client_max_retries + 1):
                delay: float | None = None
                try:
                    async with asyncio.timeout(self.cfg.request_timeout_s):
                        status, headers, raw = await send(body)
                except TimeoutError:
                    error = f"no complete answer within the request deadline ({self.cfg.request_timeout_s:g} s)"
                except ReplyTooLarge as e:  # the same request would bring the same reply
                    return Completion(request.id, error=str(e), latency_s=time.perf_counter() - start)
                except Exception as e:  # noqa: BLE001 - connection errors of either transport: retried
                    error = f"{type(e).__name__}: {str(e)[:300]}"
                else:
                    latency = time.perf_counter() - start
                    if status == 200:
                        return self._completion(request.id, raw, latency)
                    if 300 <= status < 400:
                        return Completion(request.id, latency_s=latency, error=(
                            f"HTTP {status}: {self._root} redirects to {headers.get('Location', '?')}; mip does not follow "
                            "redirects, so the API key stays with its origin. Set model.base_url to the final address."))
                    error = f"HTTP {status}: {error_message(raw)}"
                    if not should_retry(status, headers):  # the request itself is refused; the same one fails again
                        return Completion(request.id, error=error, latency_s=latency)
                    delay = retry_delay(headers, retry)
                if retry < self.cfg.client_max_retries:
                    await asyncio.sleep(retry_delay({}, retry) if delay is None else delay)
            return Completion(request.id, error=error, latency_s=time.perf_counter() - start)

    def _completion(self, request_id: str, raw: bytes, latency: float) -> Completion:
        try:
            return completion_from(request_id, orjson.loads(raw), latency)
        except orjson.JSONDecodeError:
            head = raw[:60].decode("utf-8", "replace").strip().replace("\n", " ")
            return Completion(request_id, latency_s=latency, error=(
                f"{self._root}/chat/completions answered HTTP 200 with no JSON ({len(raw)} bytes: {head!r}…). "
                "A web page here usually means model.base_url is not the API root (e.g. https://host/v1)."))

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

    async def _send(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        """aiohttp: post one body, read the reply (capped); redirects are not followed."""
        session = self._session()
        async with session.post(self._url, data=body, allow_redirects=False, **self._proxy) as response:
            limit = self.cfg.max_response_bytes
            if response.content_length is not None:  # the usual case: one read of a known length
                if response.content_length > limit:
                    raise ReplyTooLarge(response.content_length, limit)
                return response.status, response.headers, await response.read()
            raw = bytearray()  # chunked, or until the connection closes: counted as it comes
            async for chunk in response.content.iter_any():
                raw += chunk
                if len(raw) > limit:
                    raise ReplyTooLarge(None, limit)
            return response.status, response.headers, bytes(raw)

    async def _send_sdk(self, body: dict[str, Any]) -> tuple[int, Mapping[str, str], bytes]:
        """The ``openai`` SDK: its retries off and redirects not followed (the rules are
        :meth:`_call`'s); the reply is read raw, capped, and parsed like aiohttp's."""
        openai = _import_openai()
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                base_url=self.cfg.base_url, api_key=self._api_key, max_retries=0, timeout=self.cfg.request_timeout_s,
                http_client=openai.DefaultAsyncHttpxClient(follow_redirects=False, timeout=self.cfg.request_timeout_s))
        body = dict(body)
        named = {"model": body.pop("model"), "messages": body.pop("messages")}
        try:
            async with self._client.chat.completions.with_streaming_response.create(**named, extra_body=body) as response:
                raw = bytearray()
                async for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > self.cfg.max_response_bytes:
                        raise ReplyTooLarge(None, self.cfg.max_response_bytes)
                return response.http_response.status_code, response.headers, bytes(raw)
        except openai.APIStatusError as e:
            try:
                raw = e.response.content
            except Exception:  # noqa: BLE001 - a body the SDK did not read
                raw = json.dumps({"error": {"message": e.message}}).encode()
            return e.status_code, e.response.headers, raw


class ReplyTooLarge(RuntimeError):
    def __init__(self, size: int | None, limit: int):
        super().__init__(f"a reply {'of ' + format(size, ',') + ' bytes' if size else ''} over model.max_response_bytes "
                         f"({limit:,}); raise the limit if such replies are expected")


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin the API key is for."""

    def __init__(self, url: str):
        self.origin = _origin(url)

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        if _origin(newurl) != self.origin:
            raise BackendSetupError(f"{req.full_url} redirects to another origin ({newurl}); mip does not send the API "
                                    "key there. Set model.base_url to the server that answers.")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = URL(url)
    return parsed.scheme, parsed.host or "", parsed.port


def _read_capped(response: Any, limit: int) -> bytes:
    with response:
        raw = response.read(limit + 1)
    if len(raw) > limit:
        raise ReplyTooLarge(None, limit)
    return raw


def _with_deadline(work: Callable[[], bytes], seconds: float, why: str) -> bytes:
    """``work()`` in a daemon thread, waited for at most ``seconds`` (urllib's own timeout
    bounds each socket read, not the whole exchange: a dripping server would pass it)."""
    result: list = []

    def run() -> None:
        try:
            result.append((True, work()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            result.append((False, e))

    thread = threading.Thread(target=run, name="mip-check", daemon=True)
    thread.start()
    thread.join(seconds)
    if not result:
        raise BackendSetupError(why)
    ok, value = result[0]
    if not ok:
        if isinstance(value, ReplyTooLarge):
            raise BackendSetupError(str(value)) from None
        raise value
    return value
