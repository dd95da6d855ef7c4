"""A local OpenAI-compatible server for benchmarks: answers /v1/chat/completions after a fixed
latency with a realistic reply (content ending in the JSON answer, a 20,000-character
reasoning field, usage), like the server peer tools were measured against. ``GET /count``
says how many it answered, the requests it held in flight (peak, and the time integral
since ``POST /reset`` for the mean) and the sustained rate (answers per second between the
10th and 90th percentile answer since the reset).

    python benchmarks/bench_server.py PORT LATENCY_S
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from aiohttp import web

REASONING = ("Instance 1 is positive. Instance 2 is negative. " * 420)[:20_000]
CONTENT = ("Counting the labels of every instance. " * 50)[:1_960] + ' {"answer": "positive"}'


def main() -> None:
    port, latency = int(sys.argv[1]), float(sys.argv[2])
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})
    body = json.dumps({
        "id": "bench", "object": "chat.completion", "created": 0, "model": "bench-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": CONTENT, "reasoning": REASONING}}],
        "usage": {"prompt_tokens": 60_000, "completion_tokens": 5_000, "total_tokens": 65_000},
    }).encode()
    models = json.dumps({"object": "list", "data": [{"id": "bench-model", "object": "model"}]}).encode()
    served = {"n": 0, "in_flight": 0, "peak": 0, "area": 0.0, "since": None, "last": None}
    answered_at: list[float] = []  # since the last reset

    def account(change: int) -> None:
        """Requests in flight over time: their peak and time integral (for the mean)."""
        now = time.monotonic()
        if served["last"] is not None:
            served["area"] += served["in_flight"] * (now - served["last"])
        served["since"] = served["since"] or now
        served["last"] = now
        served["in_flight"] += change
        served["peak"] = max(served["peak"], served["in_flight"])

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        account(+1)
        try:
            await asyncio.sleep(latency)
        finally:
            account(-1)
        served["n"] += 1
        answered_at.append(time.monotonic())
        return web.Response(body=body, content_type="application/json")

    async def listing(request: web.Request) -> web.Response:
        return web.Response(body=models, content_type="application/json")

    def sustained() -> float | None:
        """Requests answered per second between the 10th and the 90th percentile answer: the
        rate with the ramp-up (imports, planning, the first requests) and the tail left out."""
        n = len(answered_at)
        lo, hi = n // 10, n - 1 - n // 10
        return (hi - lo) / (answered_at[hi] - answered_at[lo]) if n >= 20 and answered_at[hi] > answered_at[lo] else None

    async def count(request: web.Request) -> web.Response:
        return web.json_response({**served, "sustained": sustained()})

    async def reset(request: web.Request) -> web.Response:
        served.update(peak=served["in_flight"], area=0.0, since=None, last=None)
        answered_at.clear()
        return web.json_response(served)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", listing)
    app.router.add_get("/count", count)
    app.router.add_post("/reset", reset)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, backlog=2048)


if __name__ == "__main__":
    main()
