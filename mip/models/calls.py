"""The one wrapper around every backend's calls: retries of infrastructure failures with
backoff, and call statistics.

Each failed request is retried by one layer only. A backend that applies the retry rules
to each request itself (``Backend.retries_each_request``: openai_compat, which must, to
honour a server's Retry-After inside its event loop, ``client_max_retries`` times) hands
back an error only once those are spent: it is final here. Every other failure — the
errors of a backend that does not retry, and the requests a crash of the backend cut
short — is retried here, ``infra_retries`` times.

>>> stats = CallStats()                                            # doctest: +SKIP
>>> for completion in call_with_retries(backend, requests, retries=3, stats=stats): ...   # doctest: +SKIP

Exercised by ``pytest tests/test_runner.py -k retries``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from mip.models.base import Backend, Completion, Request


@dataclass
class CallStats:
    calls: int = 0
    failed: list[str] = field(default_factory=list)
    """Request ids whose calls kept failing."""
    errors: list[str] = field(default_factory=list)


def call_with_retries(backend: Backend, requests: Iterable[Request], retries: int, stats: CallStats) -> Iterator[Completion]:
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
        if failed and retry < retries:
            time.sleep(min(2**retry, 30))
    for r in [*failed, *source]:  # what is still unasked after a crash on the last try fails too
        _give_up(r, last_error, stats)


def _give_up(request: Request, last_error: dict[str, str], stats: CallStats) -> None:
    stats.failed.append(request.id)
    why = last_error.get(request.id, "never asked after the backend failed")
    stats.errors.append(f"{request.id}: infrastructure failure persisted ({why[:300]}); left unstored for a rerun")


def _tracked(pending: Iterable[Request], in_flight: dict[str, Request], errors: list[BaseException]) -> Iterator[Request]:
    """``pending`` as the backend pulls it, noting each request in flight and any error of the source."""
    try:
        for request in pending:
            in_flight[request.id] = request
            yield request
    except Exception as e:
        errors.append(e)
        raise
