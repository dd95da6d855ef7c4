"""Request throughput of mip's job loop against a local server, and the cost of a rerun.

    python benchmarks/throughput.py [--rows 1:0.2 16:0.2 64:0.2 256:0.2 512:5] [--experiments 2000]
                                    [--folder DIR] [--repeat 3] [--transport aiohttp|openai]

A row ``c:L`` runs one job of ``--experiments`` experiments at concurrency c against
benchmarks/bench_server.py answering after L seconds with a ~22 KB reply (a 20,000-character
reasoning field); each request carries a ~200 KB prompt (2,000 instances of ~100 characters).
mip runs pinned to the first core — the whole job: planning, prompts, requests, parsing,
scoring and one durable record line per experiment (mip.store.packs) — and the server to the second.

Reported per row (the median of ``--repeat`` runs, with the range): experiments/s against the
ideal c/L, mip's CPU time per experiment (and the kernel's share of it: sending the prompts
and writing the records; "new file ms" is the kernel's time to create one record-sized file
in the store's folder just before each run, what a file per record cost before packs, which on
this machine's disk depends on what was deleted there in the last minutes), the requests the server held in flight (time-weighted mean and peak), and how
long after the job started the first request arrived (imports, pools, planning, the server
check). "Sustained" is the server's answer rate between its 10th and 90th percentile answer:
the job's rate with that start and the last requests' tail left out.
"Ceiling" is a bare client on the same core, run right after each job: it only posts one
prebuilt body of the same size n times at concurrency c and reads the replies — the most any
client reaches against this server on this machine (a raw aiohttp client).
Then the same job again: requests made (must be 0) and its time. ``--folder`` puts the store
elsewhere (e.g. /dev/shm, to see the cost of the file system apart).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_state(port: int, reset: bool = False) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{'reset' if reset else 'count'}",
                                     method="POST" if reset else "GET")
    with urllib.request.urlopen(request) as r:
        return json.loads(r.read())


def served(port: int) -> int:
    return server_state(port)["n"]


def start_server(latency: float) -> tuple[subprocess.Popen, int]:
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "bench_server.py"), str(port), str(latency)])
    for _ in range(200):
        try:
            served(port)
            return server, port
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise RuntimeError("the benchmark server did not start")


def config(folder: Path, port: int, concurrency: int, experiments: int, name: str = "", transport: str = "aiohttp"):
    from mip.tools.audit import task_config
    from mip.config import (AuditOptions, BudgetConfig, Config, OpenAICompatModelConfig, PathsConfig, PatternConfig,
                            PromptVariantConfig)

    table = folder / "bench.csv"
    if not table.exists():
        words = ["a quietly moving film", "dull and lifeless", "beautifully acted", "an utter mess", "warm and funny"]
        pd.DataFrame({"text": [" ".join(words[(i + k) % 5] for k in range(5))[:100] + f" #{i}" for i in range(6000)],
                      "label": ["positive" if i % 2 else "negative" for i in range(6000)]}).to_csv(table, index=False)
    task = task_config(AuditOptions(data=str(table), labels=["negative", "positive"],
                                    question="Determine the majority sentiment label among all provided instances."),
                       "bench", 3000)
    model = OpenAICompatModelConfig(name="bench", backend="openai_compat", model_id="bench-model", context_window=1_000_000,
                                    base_url=f"http://127.0.0.1:{port}/v1", max_concurrency=concurrency,
                                    deterministic=False, request_timeout_s=120, transport=transport,
                                    api_key_env="MIP_BENCH_KEY")  # a key: every reply is searched for it (masking)
    return Config(model=model, task={"bench": task}, pattern=PatternConfig("random"), budget=BudgetConfig("20k", 20000),
                  prompt_variant=PromptVariantConfig("standard"), n=2000, p=0.55, order_seeds=list(range(experiments // 2)),
                  paths=PathsConfig(results_dir=str(folder), store_dir=str(folder / f"store-{name or concurrency}"),
                                    cache_dir=str(folder / "cache")), progress=False, setting="bench")


def new_file_ms(folder: Path, files: int = 200, size: int = 72_000) -> float:
    """Kernel time (ms) to create, write and close one record-sized file in ``folder``: how
    costly a new file is on this disk right now. On ext4 without a journal it grows with the
    inodes freed nearby in the last minutes (RESULTS.md, 2026-12-03), so a disk row is read
    beside it. The files stay until the benchmark's folder is removed."""
    probe = Path(tempfile.mkdtemp(dir=folder, prefix="probe-"))
    data, before = b"x" * size, resource.getrusage(resource.RUSAGE_THREAD).ru_stime
    for i in range(files):
        fd = os.open(probe / f"{i}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.close(fd)
    return 1000 * (resource.getrusage(resource.RUSAGE_THREAD).ru_stime - before) / files


def one_run(folder: Path, port: int, c: int, latency: float, n: int, name: str, transport: str) -> dict:
    from mip.data import build_pool
    from mip.job import run_job

    cfg = config(folder, port, c, n, name, transport)
    build_pool(cfg.task["bench"], None, cfg.paths.cache_dir)  # the pool is built outside the timing
    before = served(port)
    server_state(port, reset=True)
    start_times, wall, started = os.times(), time.perf_counter(), time.monotonic()
    summary = run_job(cfg, folder / f"job-{name}")
    wall, end_times = time.perf_counter() - wall, os.times()
    state = server_state(port)
    assert summary.ok and summary.stored_now == n, summary.errors[:3]
    # the job's process time, its children's included (os.times counts children once they are waited for)
    user = end_times.user - start_times.user + end_times.children_user - start_times.children_user
    system = end_times.system - start_times.system + end_times.children_system - start_times.children_system
    before_rerun = served(port)
    rerun = time.perf_counter()
    again = run_job(cfg, folder / f"rerun-{name}")
    rerun = time.perf_counter() - rerun
    assert again.stored_now == 0
    return {"seconds": wall, "exp/s": n / wall, "ratio": n / wall / (c / latency),
            "sustained": state["sustained"] or float("nan"), "cpu": 1000 * (user + system) / n,
            "kernel": 1000 * system / n, "mean in flight": state["area"] / max(1e-9, state["last"] - state["since"]),
            "peak": state["peak"], "first request s": state["since"] - started, "requests": before_rerun - before,
            "rerun requests": served(port) - before_rerun, "rerun s": rerun}


def ceiling(port: int, c: int, latency: float, n: int) -> dict:
    """What this machine and server allow at concurrency c: a client that does nothing but post
    one prebuilt request body of the same size n times (aiohttp, one connection per slot) and
    read each reply, on the same core as mip. Its ratio to c/L is the most any client can reach."""
    import asyncio

    import aiohttp
    import orjson

    body = orjson.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "x" * 215_000}],
                         "temperature": 0.0, "max_tokens": 20_000})

    async def main() -> float:
        gate = asyncio.Semaphore(c)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c),
                                         headers={"Content-Type": "application/json"}) as session:
            async def one() -> None:
                async with gate, session.post(f"http://127.0.0.1:{port}/v1/chat/completions", data=body) as response:
                    await response.read()

            start, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(one() for _ in range(n)))
            return time.perf_counter() - start, time.process_time() - cpu

    server_state(port, reset=True)
    wall, cpu = asyncio.run(main())
    return {"ratio": n / wall / (c / latency), "sustained": (server_state(port)["sustained"] or float("nan")) / (c / latency),
            "cpu": 1000 * cpu / n}


def sdk_alone(port: int, c: int, latency: float, n: int) -> dict:
    """The openai SDK alone with its aiohttp transport (``DefaultAioHttpClient``) on the same core:
    n chat completions with the same ~215 KB message at concurrency c, the replies parsed into the
    SDK's objects — requests and replies only, nothing planned, scored or stored (the
    SDK's own aiohttp transport, as peer tools use it)."""
    import asyncio

    from openai import AsyncOpenAI, DefaultAioHttpClient

    text = "x" * 215_000

    async def main() -> tuple[float, float]:
        gate = asyncio.Semaphore(c)
        async with AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="bench", max_retries=0, timeout=120,
                               http_client=DefaultAioHttpClient()) as client:
            async def one() -> None:
                async with gate:
                    await client.chat.completions.create(model="bench-model", max_tokens=20_000, temperature=0.0,
                                                         messages=[{"role": "user", "content": text}])

            start, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(one() for _ in range(n)))
            return time.perf_counter() - start, time.process_time() - cpu

    server_state(port, reset=True)
    wall, cpu = asyncio.run(main())
    return {"ratio": n / wall / (c / latency), "cpu": 1000 * cpu / n}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", nargs="+", default=["1:0.2", "16:0.2", "64:0.2", "256:0.2", "512:5"],
                        help="concurrency:latency_s pairs")
    parser.add_argument("--experiments", type=int, default=2000)
    parser.add_argument("--experiments-at-c1", type=int, default=100, help="c = 1 takes N·L seconds; fewer there")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the median is reported")
    parser.add_argument("--folder", default=None, help="where the store goes (default: a temporary folder)")
    parser.add_argument("--transport", default="aiohttp", choices=["aiohttp", "openai"], help="model.transport")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the bare client that measures the ceiling")
    parser.add_argument("--sdk", action="store_true",
                        help="after each job also run the openai SDK alone with its aiohttp transport (same core)")
    args = parser.parse_args()
    os.environ.setdefault("MIP_BENCH_KEY", "sk-bench-" + os.urandom(12).hex())  # the server takes any key
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    rows = []
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        folder = Path(tmp)
        for row in args.rows:
            c, latency = int(row.split(":")[0]), float(row.split(":")[1])
            n = args.experiments_at_c1 if c == 1 else args.experiments
            server, port = start_server(latency)
            try:
                runs, ceilings, sdks, loads, probes = [], [], [], [], []
                for k in range(args.repeat):  # alternating, so both see the machine at the same moments
                    loads.append(os.getloadavg()[0])
                    probes.append(new_file_ms(folder))
                    runs.append(one_run(folder, port, c, latency, n, f"c{c}-L{latency:g}-{args.transport}-{k}", args.transport))
                    if not args.no_ceiling:
                        ceilings.append(ceiling(port, c, latency, n))
                    if args.sdk:
                        sdks.append(sdk_alone(port, c, latency, n))
            finally:
                server.terminate()
            median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            top = {k: statistics.median(r[k] for r in ceilings) if ceilings else float("nan") for k in ("ratio", "sustained", "cpu")}
            sdk = {k: statistics.median(r[k] for r in sdks) if sdks else float("nan") for k in ("ratio", "cpu")}
            lo, hi = min(r["exp/s"] for r in runs), max(r["exp/s"] for r in runs)
            rows.append({"c": c, "L (s)": latency, "experiments": n, "runs": len(runs), "exp/s": round(median["exp/s"], 1),
                         "range": f"{lo:.0f}–{hi:.0f}", "ideal c/L": round(c / latency, 1), "ratio": round(median["ratio"], 3),
                         "sustained exp/s": round(median["sustained"], 1),
                         "sustained ratio": round(median["sustained"] / (c / latency), 3),
                         "ratios": "/".join(f"{r['ratio']:.3f}" for r in runs),
                         "ceiling ratio": round(top["ratio"], 3), "ceiling sustained": round(top["sustained"], 3),
                         "ceiling CPU ms/req": round(top["cpu"], 2),
                         "sdk ratio": round(sdk["ratio"], 3), "sdk ratios": "/".join(f"{r['ratio']:.3f}" for r in sdks),
                         "sdk CPU ms/req": round(sdk["cpu"], 2), "load 1 min": round(statistics.median(loads), 2),
                         "new file ms": "/".join(f"{p:.3f}" for p in probes),
                         "CPU ms/exp": round(median["cpu"], 2), "CPU ms/exp each": "/".join(f"{r['cpu']:.2f}" for r in runs), "of it kernel": round(median["kernel"], 2),
                         "mean in flight": round(median["mean in flight"], 1), "peak in flight": int(median["peak"]),
                         "first request s": round(median["first request s"], 3),
                         "requests": int(median["requests"]), "rerun requests": int(max(r["rerun requests"] for r in runs)),
                         "rerun s": round(median["rerun s"], 2)})
            print(rows[-1], flush=True)
    print()
    print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
