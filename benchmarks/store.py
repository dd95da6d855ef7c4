"""The store at scale: write and read records with 20K-token reasoning traces, then the
analysis time to Table 2 from them.

    python benchmarks/store.py [--records 50000] [--trace-chars 80000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from mip.experiment.records import Attempt, Experiment, Record, Stage
from mip.store import Store, record_files
from mip.analysis.results import load_local
from mip.experiment.scoring import InvalidKind, Verdict
from mip.analysis.stats import model_table
from mip.experiment.instances import PATTERNS


def make(i: int, trace: str, rng: random.Random) -> Record:
    pattern = PATTERNS[i % 7]
    e = Experiment(model=f"model{i % 15}", task=("math", "ner", "occurrence", "sentiment", "wsd")[i % 5], n=2000, p=0.55,
                   majority_label="a", seed=i % 3, pattern=pattern, order_seed=(i // 7) % 3 if pattern == "random" else None,
                   prompt_variant="standard", budget="20k")
    verdict = rng.choice([Verdict.CORRECT, Verdict.CORRECT, Verdict.INCORRECT, Verdict.INVALID])
    kind = None if verdict.valid else InvalidKind.PARSE
    stage = Stage(name="answer", prompt_hash="0" * 64, output='{"answer": "a"}', reasoning=trace, finish_reason="stop",
                  prompt_tokens=60000, completion_tokens=20000, latency_s=30.0, usage={"prompt_tokens": 60000})
    return Record(key=f"{i:024d}", experiment=e, pool_version="p", instance_ids=[], instance_labels=[],
                  prompt_hash="0" * 64, attempts=[Attempt(index=0, stages=[stage], answer="a", verdict=verdict,
                                                          invalid_kind=kind)],
                  answer="a", verdict=verdict, invalid_kind=kind,
                  created_at="2026-11-30T00:00:00+00:00")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--trace-chars", type=int, default=80_000)
    args = parser.parse_args()
    rng = random.Random(0)
    trace = ("Instance 17: place. Instance 18: programming language. " * (args.trace_chars // 50))[: args.trace_chars]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "store")
        start = time.perf_counter()
        for i in range(args.records):
            store.put(make(i, trace, rng))
        store.close()  # every record on disk
        write = time.perf_counter() - start
        size = sum(p.stat().st_size for p in record_files(store.root)) / 1e6
        start = time.perf_counter()
        frame = load_local([store.root])
        read = time.perf_counter() - start
        start = time.perf_counter()
        table = model_table(frame)
        analysis = time.perf_counter() - start
    print(f"records: {args.records:,} with {args.trace_chars:,}-character traces, {size:,.0f} MB on disk")
    print(f"write: {write:,.1f} s ({size / write:,.0f} MB/s, {args.records / write:,.0f} records/s)")
    print(f"read into the analysis table: {read:,.1f} s ({size / read:,.0f} MB/s)")
    print(f"Table 2 from the table: {analysis:,.2f} s for {len(table)} models")


if __name__ == "__main__":
    main()
