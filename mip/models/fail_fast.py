"""Fail fast: a job stops after a few consecutive refusals no retry can mend, and a sweep
does not start the same model's next job: a refused key or model costs a few requests, not a sweep's.

A refusal of the request itself — HTTP 400 (a rejected parameter; a context-length refusal is
a verdict, :mod:`mip.models.overflow`, and never counts here), 401 (a bad key), 402 (no
credits), 403 (no access), 404 (no provider serves the body, or no such model), 422 — would
be met again by every request of the sweep. After ``LIMIT`` of them in a row the job sends
nothing more and ends with one line that names the status, the provider's message and the
fix. Until the first reply, at most ``LIMIT`` requests are in flight, so a job against a
server that refuses everything sends ``LIMIT`` requests, not ``max_concurrency`` or all,
however slowly the refusals come: the gate opens on the first reply that is not a refusal
(an answer, a context-length verdict, a retryable 429 or 5xx), never on a clock.

A job pays that first reply's latency at ``LIMIT`` requests once per process and model: a
model whose requests were answered in this process (the same model config, API key and base
URL, :func:`healthy`) starts its later jobs with the gate open — the Hydra basic launcher runs
a sweep's jobs one after another in one process. The memory is the process's own, never on
disk: a new command, or a SLURM array's job in a process of its own, waits for a first reply.

A retryable reply (408, 409, 429, 5xx, a timeout) keeps its backoff and leaves the count as
it is. A wait the server asks for (``Retry-After``) longer than a minute (``LONGEST_WAIT_S``, or
the request deadline where that is shorter) stops the job the same way, with the provider's
message and when to run the same command again: a retry before that time would be refused again.

The count and the stop are kept in ``<sweep folder>/.fail_fast/<model>.json`` (in a sweep
only, :mod:`mip.models.sweep_gate`): refusals in a row count across the sweep's jobs of a model (:func:`keep`), and each
later job of the sweep for a stopped model ends at its start with the same line, before it
sends anything (:func:`resume`). A new command is a new sweep: it tries again.

>>> policy = FailFast("m", "OPENROUTER_API_KEY")
>>> [policy.refused(401, "Invalid credentials") for _ in range(LIMIT)]
[False, False, True]
>>> first, _, fix = policy.tripped.partition(" — ")
>>> print(first); print(fix)
model m: stopped after 3 refusals in a row, HTTP 401 "Invalid credentials"
the key in $OPENROUTER_API_KEY was refused; set a valid one, then run the same command again
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

LIMIT = 3
WAIT_LINE_EVERY_S = 10.0
"""A job says a wait the server asked for at most this often."""
LONGEST_WAIT_S = 60.0
"""The longest wait a server may ask for (``Retry-After``) that a job waits out; a longer one stops it."""
"""Refusals in a row that stop a job; also the requests in flight before a first reply."""
REFUSALS = frozenset({400, 401, 402, 403, 404, 422})

_ANSWERED: set[str] = set()
"""Identities (:func:`identity`) of models answered in this process: their jobs start open."""


def identity(*parts: object) -> str:
    """A digest of what decides whether a provider answers (the model config, the key, the base
    URL): kept in memory instead of the key itself.

    >>> identity("cfg", "sk-1") == identity("cfg", "sk-1") != identity("cfg", "sk-2")
    True
    """
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def healthy(ident: str | None) -> bool:
    """Whether a model of this identity was answered in this process."""
    return ident is not None and ident in _ANSWERED


class ProviderRefused(Exception):
    """A job stopped by :class:`FailFast`: the message is the one line to print. ``skipped``: the
    job sent nothing, as an earlier job of the sweep had stopped its model (said once already)."""

    def __init__(self, message: str, skipped: bool = False):
        super().__init__(message)
        self.skipped = skipped


_PARAMETER = (re.compile(r"unsupported (?:value|parameter)s?:? '([\w.]+)'", re.I),
              re.compile(r"'([\w.]+)' is not supported", re.I),
              re.compile(r"\bparam(?:eter)?[\"']?\s*[:=]\s*[\"']?([\w.]+)", re.I))


def rejected_parameter(message: str) -> str | None:
    """The body parameter a refusal names, in OpenAI's words ("Unsupported value: 'temperature'
    does not support 0.0 with this model. Only the default (1) value is supported.",
    "Unsupported parameter: 'max_tokens' …") or vLLM's ``(parameter=…)``.

    >>> rejected_parameter("Provider returned error (OpenAI): Unsupported value: 'temperature' does not support 0.0")
    'temperature'
    """
    for pattern in _PARAMETER:
        if match := pattern.search(message):
            return match.group(1)
    return None


def fix_for(status: int | None, message: str, key_env: str | None = None) -> str:
    """What to do about a refusal, as the providers document their statuses
    (https://openrouter.ai/docs/api-reference/errors; Google's 400 API_KEY_INVALID)."""
    lower = message.lower()
    if status == 404 and "no endpoints" in lower:
        return ("no provider in model.provider.order serves every parameter of this body (require_parameters) or "
                "its max_tokens; run the command with preflight=only to see which, then drop the parameter or choose "
                "another provider")
    if status == 402:
        return "the account has too few credits for this request; add credits"
    if status == 401 or (status == 400 and ("api key" in lower or "api_key" in lower)):  # Google: 400 API_KEY_INVALID
        return f"the key in ${key_env} was refused; set a valid one" if key_env else "the API key was refused"
    if status == 403:
        return "the key may not use this model, or the input was flagged by the provider's moderation"
    if status == 404:
        return "the provider does not know this model id; check model.model_id and model.base_url"
    if status == 400 and ("provider.order" in lower or "invalid provider" in lower):
        return "check the names in model.provider.order against the model's provider list on OpenRouter"
    if status in (400, 422) and (param := rejected_parameter(message)):
        return (f"the provider rejected the parameter {param!r} of the body: change it in the model's config"
                + (" (model.temperature=null leaves temperature out)" if param == "temperature" else ""))
    if status in (400, 422):
        return ("the provider rejected a parameter of the body; run the command with preflight=only to see it, and "
                "change the model's config (e.g. model.temperature=null leaves temperature out)")
    if status == 200:  # another model's reply (mip.models.served)
        return ("another model answers for this model id; check model.model_id and model.base_url, or pin the "
                "provider (model.provider.order)")
    return "see the provider's message"


class FailFast:
    """The fail-fast state of one job's requests; its async methods run on the backend's loop."""

    def __init__(self, model: str, key_env: str | None = None, limit: int = LIMIT, request_timeout_s: float = 3600.0,
                 ident: str | None = None):
        self.model, self.key_env, self.limit = model, key_env, limit
        self.longest_wait_s = min(LONGEST_WAIT_S, request_timeout_s)
        """The longest ``Retry-After`` waited out: a minute, or the request deadline where shorter."""
        self.ident = ident
        """:func:`identity` of the model, key and base URL; None: not remembered across jobs."""
        self.in_row = 0
        self.answers = 0
        self.replied = healthy(ident)
        """A reply that is no refusal came (or came in an earlier job of this process): the gate is open."""
        self.in_flight = 0
        self.tripped: str | None = None
        """The one line saying why the job stopped; None while it goes on."""
        self.closed = False
        """The job is stopping (set by the backend's ``stop_sending``): a request waiting at the gate is not sent."""
        self.on_settled: Callable[[], None] | None = None
        """Called once when the first reply settles the model (the gate opens, or the job stops):
        a sweep's other processes waiting on it go on (:mod:`mip.models.sweep_gate`)."""
        self._changed: asyncio.Condition | None = None
        self._waiting = 0
        self._said_wait = float("-inf")
        """Requests waiting in :meth:`_turn` (only they need a wake-up)."""

    def _open(self) -> bool:
        """The gate is open: an answer or another reply that is no refusal came (:meth:`accepted`)."""
        return self.replied or bool(self.answers)

    async def admit(self) -> bool:
        """Wait for a turn to send; False once the job has stopped (send nothing). Once the gate
        is open this takes no lock: the hot path of a healthy job."""
        if not (self.tripped or self._open()):
            await self._turn()
        if self.tripped or self.closed:
            return False
        self.in_flight += 1
        return True

    async def _turn(self) -> None:
        """Before the gate opens, no more in flight than refusals still allowed in a row."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            self._waiting += 1
            try:
                while not (self.tripped or self.closed or self._open()
                           or self.in_flight < max(1, self.limit - self.in_row)):
                    await self._changed.wait()  # woken when a try is over (done), however long it takes
            finally:
                self._waiting -= 1

    async def done(self) -> None:
        """One admitted try is over (whatever it brought): a request waiting for its turn may go."""
        self.in_flight -= 1
        if self._waiting:
            async with self._changed:
                self._changed.notify_all()

    def gated(self, send: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        """``send`` that waits its turn (:meth:`admit`), and raises :class:`ProviderRefused`
        once the job has stopped: nothing more is sent."""
        async def one(body: Any) -> Any:
            if not await self.admit():
                raise ProviderRefused(f"not sent: {self.tripped or 'the job is stopping'}")
            try:
                return await send(body)
            finally:
                await self.done()
        return one

    def answered(self) -> None:
        """The model answered: the refusals in a row end, the gate opens, and the process
        remembers the model as healthy (:func:`healthy`) for its later jobs."""
        self.in_row = 0
        self.answers += 1
        self.accepted()
        if self.ident is not None:
            _ANSWERED.add(self.ident)

    def accepted(self) -> None:
        """A reply that is no refusal and no answer (a context-length verdict, a retryable 429
        or 5xx, a malformed 200): the request got through, so the gate opens; the refusals in a
        row stay as they are."""
        if not self.replied:
            self.replied = True
            self._settled()

    def _settled(self) -> None:
        hook, self.on_settled = self.on_settled, None
        if hook is not None:
            hook()

    def refused(self, status: int, message: str) -> bool:
        """A reply no retry can mend; after ``limit`` in a row the job stops: whether it has."""
        self.in_row += 1
        if self.in_row >= self.limit and not self.tripped:
            self.tripped = (f"model {self.model}: stopped after {self.in_row} refusals in a row, HTTP {status} "
                            f"\"{' '.join(message.split())[:300]}\" — {fix_for(status, message, self.key_env)}, then "
                            "run the same command again")
            self._settled()
        return bool(self.tripped)

    def wait_too_long(self, seconds: float | None, status: int, message: str) -> bool:
        """Whether a wait the server asked for (None: none) is past ``longest_wait_s``, or the
        job stopped already: then the job stops. A shorter wait is said in one line (at most one
        every ``WAIT_LINE_EVERY_S``), so a job that waits is never silent."""
        if seconds is None or self.tripped:
            return bool(self.tripped)
        if seconds <= self.longest_wait_s:
            if seconds >= 1 and time.monotonic() - self._said_wait >= WAIT_LINE_EVERY_S:
                self._said_wait = time.monotonic()
                print(f"model {self.model}: HTTP {status} \"{' '.join(message.split())[:200]}\" asks to wait "
                      f"{seconds:,.0f} s (Retry-After); waiting, then trying again", file=sys.stderr, flush=True)
            return False
        when = datetime.fromtimestamp(time.time() + seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        self.tripped = (f"model {self.model}: HTTP {status} \"{' '.join(message.split())[:300]}\" asks to wait "
                        f"{seconds:,.0f} s (Retry-After), longer than mip waits within a job "
                        f"({self.longest_wait_s:,.0f} s); stopped without retrying early. What is stored stays: "
                        f"run the same command again after {when} to carry on")
        self._settled()
        return True
