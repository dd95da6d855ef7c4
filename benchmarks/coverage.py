"""Coverage extraction throughput: mip's one-pass extraction against one regex per ID.

    python benchmarks/coverage.py [--traces 10000] [--kb 80] [--n 2000]

Builds synthetic reasoning traces in the style of App. E.1 (instance-by-instance notes,
ranges, tallies, numbers that are not IDs) and reports MB/s, the time for the whole set,
and the ratio to the baseline, which is measured on a sample and scaled to the set.
"""

from __future__ import annotations

import argparse
import random
import re
import time

from mip.analysis.coverage import mentioned_ids

PIECES = [
    "Instance {i}: \"the java island\" - place. ",
    "{i}: prog ",
    "Let me check instances {i}-{j} quickly. ",
    "So far 1,000 of the counts and 3.5 per batch, x2 again; the {i}th looks odd. ",
    "Tally after {i}: {a} place, {b} prog. ",
]


def make_trace(rng: random.Random, kb: int, n: int) -> str:
    parts, size = [], 0
    while size < kb * 1024:
        i = rng.randint(1, n)
        piece = rng.choice(PIECES).format(i=i, j=min(n, i + 40), a=rng.randint(0, n), b=rng.randint(0, n))
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def baseline(trace: str, n: int) -> set[int]:
    """What we measure against: one compiled regex per instance ID."""
    return {i for i in range(1, n + 1) if re.search(rf"(?<![\w.,]){i}(?![\w]|[.,]\d)", trace)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--kb", type=int, default=80)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--baseline-sample", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(0)
    distinct = [make_trace(rng, args.kb, args.n) for _ in range(50)]  # reused to keep memory small
    total_mb = args.traces * len(distinct[0]) / 1e6

    start = time.perf_counter()
    mentioned = 0
    for k in range(args.traces):
        mentioned += len(mentioned_ids(distinct[k % len(distinct)], args.n))
    ours = time.perf_counter() - start

    start = time.perf_counter()
    for trace in distinct[: args.baseline_sample]:
        baseline(trace, args.n)
    base = (time.perf_counter() - start) / args.baseline_sample * args.traces

    agree = all(mentioned_ids(t, args.n) == baseline(t, args.n) for t in distinct[: args.baseline_sample])
    print(f"traces: {args.traces} × {args.kb} KB = {total_mb:,.0f} MB, N = {args.n}")
    print(f"mip one pass:      {ours:8.1f} s  ({total_mb / ours:,.0f} MB/s), mean IDs mentioned {mentioned / args.traces:.0f}")
    print(f"one regex per ID:  {base:8.1f} s  (estimated from {args.baseline_sample} traces)")
    print(f"speed-up: {base / ours:,.0f}×; the same IDs as the baseline on the sampled traces: {agree}")


if __name__ == "__main__":
    main()
