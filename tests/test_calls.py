"""The request guard of mip.models.calls: retries, server delays, deadlines and the concurrency
gate, driven by scripted tries on a plain event loop (no network)."""

from __future__ import annotations

import asyncio

from mip.models.base import Completion
from mip.models.calls import RequestGuard, Retry

NO_WAIT = 0.0


def guard(retries: int = 2, deadline_s: float = 5.0, concurrency: int = 4, backoff=lambda k: NO_WAIT) -> RequestGuard:
    return RequestGuard(retries=retries, deadline_s=deadline_s, concurrency=concurrency, backoff=backoff)


def scripted(*steps):
    """An attempt that plays ``steps`` in turn: a Completion or Retry is returned, an exception
    raised, a number of seconds stalled (then a late answer). Records each try's args."""
    tries: list[tuple] = []
    script = list(steps)

    async def attempt(request_id, payload, retry, start):
        tries.append((request_id, payload, retry, start))
        step = script.pop(0)
        if isinstance(step, (int, float)):
            await asyncio.sleep(step)
            step = Completion(request_id, output="late")
        if isinstance(step, BaseException):
            raise step
        return step

    return attempt, tries


def test_a_failed_try_is_retried_then_succeeds():
    answer = Completion("r1", output="ok")
    attempt, tries = scripted(Retry("HTTP 503: busy"), ConnectionResetError("peer went away"), answer)
    waits = []
    g = guard(retries=3, backoff=lambda k: waits.append(k) or NO_WAIT)
    assert asyncio.run(g.run("r1", attempt, b"body")) is answer
    assert [(rid, payload, retry) for rid, payload, retry, _ in tries] == [("r1", b"body", 0), ("r1", b"body", 1),
                                                                            ("r1", b"body", 2)]
    assert len({start for *_, start in tries}) == 1  # one start for the request, given to every try
    assert waits == [0, 1]  # backoff, by the retries done, before each retry


def test_the_server_delay_is_honoured_instead_of_backoff():
    attempt, tries = scripted(Retry("HTTP 429: slow down", delay=0.01), Completion("r1", output="ok"))
    backoffs = []
    g = guard(backoff=lambda k: backoffs.append(k) or 10.0)  # would time the test out if used

    async def main():
        loop = asyncio.get_running_loop()
        begun = loop.time()
        completion = await asyncio.wait_for(g.run("r1", attempt), 5)
        return completion, loop.time() - begun

    completion, took = asyncio.run(main())
    assert completion.output == "ok" and backoffs == [] and len(tries) == 2
    assert took >= 0.009  # it waited what the server asked (generous: loop clocks round)


def test_a_final_completion_comes_back_at_once():
    refused = Completion("r1", error="HTTP 400: bad request", latency_s=0.1)
    attempt, tries = scripted(refused, Completion("r1", output="never asked"))
    assert asyncio.run(guard(retries=5).run("r1", attempt)) is refused
    assert len(tries) == 1


def test_the_deadline_fails_a_stalled_try_and_the_next_one_succeeds():
    attempt, tries = scripted(30.0, Completion("r1", output="ok"))
    completion = asyncio.run(asyncio.wait_for(guard(deadline_s=0.05).run("r1", attempt), 10))
    assert completion.output == "ok" and [t[2] for t in tries] == [0, 1]


def test_spent_tries_give_the_last_error_and_the_latency():
    attempt, tries = scripted(Retry("HTTP 502: bad gateway"), 30.0, RuntimeError("x" * 400))
    completion = asyncio.run(guard(retries=2, deadline_s=0.05).run("r1", attempt))
    assert len(tries) == 3
    assert completion.id == "r1" and completion.output is None
    assert completion.error == "RuntimeError: " + "x" * 300
    assert completion.latency_s >= 0.04


def test_a_stalled_last_try_names_the_deadline():
    attempt, _ = scripted(Retry("HTTP 500: oops"), 30.0)
    completion = asyncio.run(guard(retries=1, deadline_s=0.05).run("r1", attempt))
    assert completion.error == "no complete answer within the request deadline (0.05 s)"


def test_no_more_than_the_concurrency_run_at_once():
    limit, running, peak = 3, [0], [0]

    async def attempt(request_id, payload, retry, start):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        try:
            await asyncio.sleep(0.001 * (int(request_id) % 5))
            if retry == 0 and int(request_id) % 4 == 0:
                return Retry("HTTP 503: busy")  # a retry, and its wait, keep the slot
            return Completion(request_id, output=str(payload))
        finally:
            running[0] -= 1

    g = guard(concurrency=limit)

    async def main():
        return await asyncio.gather(*(g.run(str(i), attempt, i) for i in range(40)))

    completions = asyncio.run(main())
    assert [c.output for c in completions] == [str(i) for i in range(40)]
    assert peak[0] == limit


def test_a_guard_per_loop_serves_each_loop():
    """The gate is made in the loop the guard first runs in (a backend makes one guard per loop)."""
    for _ in range(2):
        g = guard(concurrency=1)

        async def main(g=g):
            return await asyncio.gather(*(g.run(str(i), scripted(Completion(str(i)))[0]) for i in range(3)))

        assert [c.id for c in asyncio.run(main())] == ["0", "1", "2"]
