"""Any OpenAI-compatible chat-completions server: OpenRouter, Google's OpenAI-compatible
Gemini endpoint, ``vllm serve``, ``transformers serve``.

Requests go out on an event loop that runs in the caller's thread whenever it waits for a
completion, each through :class:`mip.models.calls.RequestGuard` (at most ``max_concurrency``
at a time), and handed back as each one finishes. Requests are pulled one by one as slots
free up, so the next prompt is built while earlier ones are in flight.

Two transports (``model.transport``, :mod:`mip.models.transports`) only send: ``aiohttp``
(default), mip's own lean client, and ``openai``, the SDK's async client with its retries off.
The guard in :mod:`mip.models.calls` owns the retry loop, the deadlines and the concurrency;
this backend makes one try at a time, and :mod:`mip.models.outcomes` says what each reply
means, the same for both transports:

- **Retries** are the ``openai`` SDK's: HTTP 408, 409, 429 and 5xx, dropped connections and
  timeouts, up to ``client_max_retries`` times, waiting what the server asks
  (``retry-after-ms``, ``Retry-After`` in seconds or as a date; a wait past a minute
  stops the job, :mod:`mip.models.fail_fast`) or else 0.5 s doubling to 8 s, less up to 25 %
  jitter; ``x-should-retry`` decides when sent. Which replies are retried, and after what
  wait, is decided in :mod:`mip.models.outcomes` only (the guard retries what raises: drops,
  timeouts).
- **Every try has one deadline**, ``request_timeout_s``, over connect, headers and body.
- **Replies are capped** at ``max_response_bytes``: a larger one is an infrastructure failure.
- **The API key stays with its origin**: redirects are not followed (the key would travel
  with them); a 3xx is an error that names where it pointed. ``check()`` refuses a redirect
  to another origin the same way (:func:`mip.models.safe_http.small_request`).

The model listing and which model answered are :mod:`mip.models.served`'s; token counts
:mod:`mip.models.tokenizer`'s. The one verdict a refusal can be: a context-length refusal
(:mod:`mip.models.overflow`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from mip.config import OpenAICompatModelConfig
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request
from mip.models.calls import RequestGuard, Retry
from mip.models.chat_api import request_body, retry_delay
from mip.models.event_loop import EventLoop
from mip.models.fail_fast import FailFast, identity
from mip.models.outcomes import Outcomes
from mip.models.overflow import refusal_completion, send_within_window
from mip.models.served import ServedModel, asked_listing, listed
from mip.models.safe_http import ReplyTooLarge, credentials, endpoint, small_request
from mip.models.tokenizer import chat_token_counts, estimate_note, find_tokenizer, server_token_counts
from mip.models.transports import TRANSPORTS, Transport

CHECK_DEADLINE_S = 30.0  # the model listing and token counts: one deadline over the whole exchange

log = logging.getLogger(__name__)


class OpenAICompatBackend(Backend):
    schema = OpenAICompatModelConfig
    # Each request runs through calls.RequestGuard (client_max_retries, with the server's
    # Retry-After), so call_with_retries does not retry its errors again.
    retries_each_request = True

    def __init__(self, cfg: OpenAICompatModelConfig, context: BackendContext):
        if not cfg.base_url:
            raise BackendSetupError(f"Model {cfg.name!r} uses openai_compat: set model.base_url.")
        if cfg.transport not in TRANSPORTS:
            raise BackendSetupError(f"Model {cfg.name!r}: unknown transport {cfg.transport!r}; "
                                    f"choose {' or '.join(TRANSPORTS)}.")
        self.cfg = cfg
        self._api_key = context.api_key or "EMPTY"
        self._tokenizer: Any = None
        self.model_id = None if cfg.model_id == "auto" else cfg.model_id
        # the API root (…/v1) without user:password@, which goes into the Authorization header instead
        self._root, self._authorization = credentials(cfg.base_url.rstrip("/"), self._api_key)
        self._loop: EventLoop | None = None
        # The transport makes its client inside the event loop on first use; the guard its gate there too.
        self._transport: Transport | None = None
        self._guard: RequestGuard | None = None
        self._same_models: set[str] = set()  # the model's other names in its listing (mip.models.served)
        self._outcomes: Outcomes | None = None  # what each reply means (mip.models.outcomes), made by generate
        self._reached: set[str] = set()  # ids of requests sent at least once (reached)
        # Remembered per process by the whole model config (base URL included) and the key: a later job
        # of a model answered here starts with the gate open (mip.models.fail_fast.healthy).
        self.fail_fast = FailFast(cfg.name, cfg.api_key_env, request_timeout_s=cfg.request_timeout_s,
                                  ident=identity(repr(cfg), self._api_key))

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatBackend({self.cfg.name!r}, {self.cfg.base_url!r})"

    def check(self) -> None:
        """Before the first call: the server answers and serves this model id.

        ``model_id: auto`` takes the one model a single-model server lists.
        """
        url = endpoint(self._root, "models")
        listing = asked_listing(lambda: self._get(url), self.cfg.name, self.cfg.base_url, self.cfg.api_key_env)
        self.model_id, self._same_models = listed(listing, self.model_id, self.cfg.name, self.cfg.base_url, url)

    def _get(self, url: str, body: bytes | None = None) -> bytes:
        return small_request(url, self._authorization, min(CHECK_DEADLINE_S, self.cfg.request_timeout_s),
                             self.cfg.max_response_bytes, body)

    # ------------------------------------------------------------------ tokens
    def count_tokens(self, prompts: Sequence[str]) -> list[int] | None:
        """Counted with ``model.tokenizer`` where it loads, else with the server's
        ``/tokenize`` endpoint where ``server_tokenize`` is set; else None (the runner
        estimates, and the job's log says why, once)."""
        if self.cfg.server_tokenize and not self.cfg.tokenizer:
            return self._server_counts(prompts)
        if self._tokenizer is None:
            tokenizer, why = find_tokenizer(self.cfg.tokenizer, offline=False)
            self._tokenizer = tokenizer or False
            if not tokenizer:
                note = estimate_note(self.cfg.tokenizer, why, self.cfg.chars_per_token)
                log.warning(f"Model {self.cfg.name}: {note}")
        if self._tokenizer is False:
            return None
        return chat_token_counts(self._tokenizer, prompts)

    def _server_counts(self, prompts: Sequence[str]) -> list[int]:
        url = endpoint(self._root, "tokenize", drop="/v1")
        if self.model_id is None:
            self.check()
        return server_token_counts(lambda body: self._get(url, body), self.model_id, prompts, url)

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        """Completions as they finish. A request is sent only while fewer than ``max_concurrency``
        are sent and not handed back (in flight, or answered and not yet stored): a kill loses at
        most that many paid replies (docs/stopping.md). A few more are built and encoded ahead,
        while no reply waits, so that a slot freed is filled at once (:meth:`EventLoop.as_finished`)."""
        if self.model_id is None:
            self.check()
        if self._outcomes is None:  # the model id is known now, and the other names its listing gives it
            served = ServedModel(self.model_id or self.cfg.model_id, self.cfg.base_url, self._same_models)
            self._outcomes = Outcomes(served, self.fail_fast, self._root, self.stop_sending)
        self._start()
        run, one_try = self._guard.run, self._one_try  # bound once, not per request
        lead = self.cfg.max_concurrency  # the caller stores each reply before the next request goes out
        yield from self._loop.as_finished(self._prepared(requests), lambda request, body: run(
            request.id, one_try, (request, body)), lead, spare=max(2, lead // 4))

    def _prepared(self, requests: Iterable[Request]) -> Iterator[tuple[Request, Any] | Completion]:
        for request in requests:
            try:
                yield request, self._encode(request)
            except (TypeError, ValueError) as e:  # it cannot be sent as it is: fails alone
                yield Completion(request.id, error=f"the request cannot be encoded: {e}")

    def _start(self) -> None:
        if self._loop is None:
            self._loop = EventLoop()
            self._guard = RequestGuard(self.cfg.client_max_retries, self.cfg.request_timeout_s,
                                       self.cfg.max_concurrency, backoff=functools.partial(retry_delay, {}))
        if self._transport is None:
            self._transport = TRANSPORTS[self.cfg.transport](self.cfg, self._root, self._api_key)

    def warm(self) -> None:
        """The event loop and the transport's client (aiohttp's import and TLS context: ~0.2 s
        of the first request's time) are made while the job's claim settles."""
        self._start()
        self._loop.run(self._transport.open())

    def reached(self, ids: Iterable[str]) -> set[str]:
        """Those of ``ids`` sent at least once: one held at fail fast's gate at a stop never went out."""
        return set(ids) & self._reached

    def stop_sending(self) -> None:
        self.fail_fast.closed = True  # a request waiting at fail fast's gate is not sent either
        if self._guard is not None:
            self._guard.closed = True

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close(self._shutdown())
        self._loop = self._transport = self._guard = None

    async def _shutdown(self) -> None:
        if self._transport is not None:
            await self._transport.close()

    def _encode(self, request: Request) -> Any:
        if self._transport is None:
            self._transport = TRANSPORTS[self.cfg.transport](self.cfg, self._root, self._api_key)
        return self._transport.encode(request_body(self.cfg, request, self.model_id))

    async def _one_try(self, request_id: str, payload: tuple[Request, Any], retry: int,
                       start: float) -> Completion | Retry:
        """One try of one request (the guard's ``OneTry``): send the body and say what the reply
        means. A context-length refusal that shows the prompt may fit is sent again at once, with
        the output limit that fits (:func:`mip.models.overflow.send_within_window`)."""
        request, body = payload
        transport, reached = self._transport.send, self._reached

        async def send(sent: Any) -> Any:  # past the gate: on its way to the provider, which may charge it
            reached.add(request_id)
            return await transport(sent)

        try:  # the transport was made by _encode, before any call; each send waits its turn (fail_fast)
            (status, headers, raw), request, refusal = await send_within_window(
                self.fail_fast.gated(send), self._encode, request, body)
        except ReplyTooLarge as e:  # the same request would bring the same reply
            return Completion(request_id, error=str(e), latency_s=time.perf_counter() - start)
        latency = time.perf_counter() - start
        if refusal is not None:  # a verdict on the prompt, no refusal of the body: the gate opens
            self.fail_fast.accepted()
            return refusal_completion(request, refusal, latency)
        completion = self._outcomes(request_id, status, headers, raw, latency, retry)
        if isinstance(completion, Completion) and request is not payload[0]:  # sent with the limit that fits
            completion = completion.model_copy(update={"max_tokens": request.max_tokens})
        return completion
