"""The one wrapper around every backend's calls: retries of infrastructure failures,
deadlines, concurrency and call statistics. A backend only turns requests into completions.

Two forms of the same policy, one for each way a backend runs its requests:

- :class:`RequestGuard`, for a backend that sends its requests on an event loop
  (openai_compat): each request runs through ``guard.run``, which holds it to ``concurrency``
  at a time, gives every try one deadline, and retries it ``retries`` times, waiting what the
  server asked (:class:`Retry`) or else the backend's backoff. The backend supplies one try
  (send, and read what the reply means); its errors come back as a final ``Completion``.
- :func:`call_with_retries`, around every backend's ``generate``: the call statistics, and
  retries with backoff for a backend that generates in batches (vllm, hf).

Each failed request is retried by one layer only. A backend whose requests run through the
guard (``Backend.retries_each_request``) hands back an error only once its tries are spent:
it is final in ``call_with_retries``. Every other failure — the errors of a backend that does
not retry, and the requests a crash of the backend cut short — is retried there,
``infra_retries`` times.

>>> stats = CallStats()                                            # doctest: +SKIP
>>> for completion in call_with_retries(backend, requests, retries=3, stats=stats): ...   # doctest: +SKIP
>>> guard = RequestGuard(retries=2, deadline_s=60, concurrency=16, backoff=backoff)  # doctest: +SKIP
>>> completion = await guard.run(request.id, backend._one_try, body)            # doctest: +SKIP

Exercised by ``pytest tests/test_runner.py -k retries`` and ``tests/test_calls.py``.

Around the scripted mock backend:

>>> from mip.config import MockModelConfig
>>> from mip.models import Request
>>> from mip.models.mock import MockBackend
>>> mock, counted = MockBackend(MockModelConfig(name="mock", model_id="mock")), CallStats()
>>> [c.id for c in call_with_retries(mock, [Request("r1", "x", 8), Request("r2", "y", 8)], 1, counted)], counted.calls
(['r1', 'r2'], 2)
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mip.models.base import Backend, Completion, Request


@dataclass
class CallStats:
    calls: int = 0
    failed: list[str] = field(default_factory=list)
    """Request ids whose calls kept failing."""
    errors: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Retry:
    """One try failed in a way another try may mend: why, and how long the server asked to
    wait first (None: the guard's backoff)."""
    error: str
    delay: float | None = None


OneTry = Callable[[str, Any, int, float], Awaitable["Completion | Retry"]]
"""One try of one request: ``one_try(request_id, payload, retry, start)``, where ``retry``
counts the tries before this one and ``start`` is the ``time.perf_counter()`` at which the
request got its slot (for ``latency_s``). It returns the final ``Completion`` (an answer, or
an error the same request would meet again) or a :class:`Retry`; an exception it raises is
retried like a :class:`Retry` without a delay."""


class RequestGuard:
    """Runs each request of an event-loop backend under the call policy: at most
    ``concurrency`` requests at a time, one deadline of ``deadline_s`` over each try, and up to
    ``retries`` more tries after one that fails, waiting the delay the server asked for or else
    ``backoff(retries_done)``. The wait is spent holding the request's slot.

    Make one per event loop (its semaphore binds to the loop it first runs in, and is made
    there). ``run`` is the only coroutine the guard adds per request, and it allocates
    nothing else; ``payload`` (what the backend sends) is handed to each try as it is.
    """

    __slots__ = ("retries", "deadline_s", "concurrency", "backoff", "_gate", "closed")

    def __init__(self, retries: int, deadline_s: float, concurrency: int, backoff: Callable[[int], float]):
        self.retries = retries
        self.deadline_s = deadline_s
        self.concurrency = concurrency
        self.backoff = backoff
        self._gate: asyncio.Semaphore | None = None
        self.closed = False
        """Set when the job stops: a request not yet sent is not sent, a failed one not retried."""

    async def run(self, request_id: str, one_try: OneTry, payload: Any = None) -> Completion:
        """The request's final completion: the first one a try returns, or, once the tries
        are spent, one whose ``error`` is the last try's."""
        if self._gate is None:  # made in the running loop
            self._gate = asyncio.Semaphore(self.concurrency)
        async with self._gate:
            start = time.perf_counter()
            error = "not sent: the job is stopping"
            for retry in range(self.retries + 1):
                if self.closed:
                    break
                delay: float | None = None
                try:
                    async with asyncio.timeout(self.deadline_s):
                        outcome = await one_try(request_id, payload, retry, start)
                except TimeoutError:
                    error = f"no complete answer within the request deadline ({self.deadline_s:g} s)"
                except Exception as e:  # noqa: BLE001 - connection errors of any transport: retried
                    error = f"{type(e).__name__}: {str(e)[:300]}"
                else:
                    if not isinstance(outcome, Retry):
                        return outcome
                    error, delay = outcome.error, outcome.delay
                if retry < self.retries:
                    await asyncio.sleep(self.backoff(retry) if delay is None else delay)
            return Completion(request_id, error=error, latency_s=time.perf_counter() - start)


def call_with_retries(backend: Backend, requests: Iterable[Request], retries: int, stats: CallStats,
                      stopping: Callable[[], bool] = lambda: False) -> Iterator[Completion]:
    """Completions as they arrive; failed calls are retried with backoff, and those that keep
    failing are reported in ``stats`` and never yielded (their work stays unstored).

    ``requests`` may be lazy: the backend pulls them as it has room. An error raised while
    making a request (the caller's own, e.g. the store) propagates as it is; an error of
    the backend fails the calls in flight, which are retried like any failed call.
    """
    source = iter(requests)
    failed: list[Request] = []
    last_error: dict[str, str] = {}
    for retry in range(retries + 1):
        in_flight: dict[str, Request] = {}
        source_error: list[BaseException] = []
        pending, failed, crashed = itertools.chain(failed, source), [], False
        try:
            for completion in backend.generate(_tracked(pending, in_flight, source_error)):
                stats.calls += 1
                request = in_flight.pop(completion.id)
                if completion.error:
                    last_error[request.id] = completion.error
                    if backend.retries_each_request:  # retried already, request by request
                        _give_up(request, last_error, stats)
                    else:
                        failed.append(request)
                else:
                    yield completion
        except Exception as e:  # noqa: BLE001 - a crashed backend call is an infrastructure failure
            if source_error:
                raise source_error[0] from None
            stats.errors.append(f"backend error: {type(e).__name__}: {str(e)[:300]}")
            failed += in_flight.values()
            last_error.update((r.id, f"backend error: {type(e).__name__}") for r in in_flight.values())
            crashed = True
        if not (failed or crashed):
            return
        if stopping():  # a stopping job retries nothing
            break
        if failed and retry < retries:
            time.sleep(min(2**retry, 30))
    for r in [*failed, *source]:  # what is still unasked after a crash on the last try fails too
        _give_up(r, last_error, stats)


def _give_up(request: Request, last_error: dict[str, str], stats: CallStats) -> None:
    stats.failed.append(request.id)
    why = last_error.get(request.id, "never asked after the backend failed")
    stats.errors.append(f"{request.id}: infrastructure failure persisted ({why[:300]}); left unstored for a rerun")


def _tracked(pending: Iterable[Request], in_flight: dict[str, Request],
             errors: list[BaseException]) -> Iterator[Request]:
    """``pending`` as the backend pulls it, noting each request in flight and any error of the source."""
    try:
        for request in pending:
            in_flight[request.id] = request
            yield request
    except Exception as e:
        errors.append(e)
        raise
