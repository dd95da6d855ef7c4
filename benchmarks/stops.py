"""Drained stops: ten SIGTERMs at c = 64 lose no delivered reply and pay no
request twice; one SIGKILL, for comparison, loses the replies in flight.

    PYTHONPATH=. python benchmarks/stops.py [--stops 10] [--concurrency 64] [--experiments 800]

A local server (tests/fake_server.py) answers each request after 1–5 s (inside the 20 s
grace) and counts, per prompt, the requests it got and the whole replies it sent. The same
run.py command is started, stopped with SIGTERM once ``concurrency`` requests are in flight
(after a random 0–2 s more), and started again, ten times; then it runs to the end. Paid twice:
requests beyond the first per prompt. Lost: replies sent whole that no record holds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mip.store import Store  # noqa: E402
from tests.fake_server import FakeServer  # noqa: E402


class SlowServer(FakeServer):
    """Each reply after a latency drawn from 1–5 s."""

    async def _answer(self, fault, request, prompt, writer) -> bool:
        await asyncio.sleep(self.rng.uniform(1.0, 5.0))
        return await super()._answer(fault, request, prompt, writer)


def stored(results: Path) -> int:
    return len(Store(results / "store", readonly=True).keys("smollm2_135m_server", "arith"))


def one_run(args: list[str], env: dict, server: FakeServer, concurrency: int, sig: int | None, rng: random.Random) -> dict:
    before = sum(server.answered.values())
    job = subprocess.Popen([sys.executable, str(REPO / "run.py"), *args], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if sig is None:
        job.communicate()
        return {"exit": job.returncode}
    while server.in_flight < concurrency and job.poll() is None:
        time.sleep(0.02)
    time.sleep(rng.uniform(0, 2))
    in_flight, sent_at_signal = server.in_flight, sum(server.calls.values())
    job.send_signal(sig)
    start = time.monotonic()
    _, err = job.communicate()
    return {"exit": job.returncode, "in_flight_at_signal": in_flight, "exit_after_s": round(time.monotonic() - start, 2),
            "sent_after_signal": sum(server.calls.values()) - sent_at_signal,
            "answered": sum(server.answered.values()) - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--experiments", type=int, default=800)
    parser.add_argument("--kill", action="store_true", help="stop once with SIGKILL instead (SIGKILL's limit)")
    opts = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp, SlowServer() as server:
        results = Path(tmp) / "results"
        env = {**os.environ, "MIP_RESULTS_DIR": str(results), "PYTHONPATH": str(REPO)}
        args = ["model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
                "model.tokenizer=null", "task=arith", "n=20", "p=0.6", "budget=smoke", "progress=false", "pattern=random",
                f"order_seeds=[{','.join(map(str, range(opts.experiments // 2)))}]",
                f"model.max_concurrency={opts.concurrency}"]
        runs = []
        for _ in range(1 if opts.kill else opts.stops):
            runs.append(one_run(args, env, server, opts.concurrency, signal.SIGKILL if opts.kill else signal.SIGTERM, rng))
            print(json.dumps(runs[-1]), flush=True)
        final = one_run(args, env, server, opts.concurrency, None, rng)
        calls = dict(server.calls)
        summary = {
            "stops": len(runs), "signal": "SIGKILL" if opts.kill else "SIGTERM", "concurrency": opts.concurrency,
            "experiments": opts.experiments, "final_exit": final["exit"], "stored": stored(results),
            "requests": sum(calls.values()), "paid_twice": sum(c - 1 for c in calls.values()),
            "lost_delivered_replies": sum(server.answered.values()) - stored(results),
            "in_flight_at_signal": [r["in_flight_at_signal"] for r in runs],
            "stored_per_stop": [r["answered"] for r in runs],
            "sent_after_signal": sum(r["sent_after_signal"] for r in runs),
            "exit_codes": sorted({r["exit"] for r in runs}),
            "exit_after_s_max": max(r["exit_after_s"] for r in runs),
        }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
