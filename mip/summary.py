"""What a job or a sweep did, as a verdict table per pattern (printed at the end of runs);
what it costs, or for a dry run would cost, is :mod:`mip.costs`'s.

    python -m mip.summary results/sweeps/2026-11-30/10-00-00

Accuracies are percentages, as in the report (analyze.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mip.costs import cost_lines, dry_tables
from mip.instances import PATTERNS
from mip.records import Record
from mip.scoring import OUTCOMES, Verdict, outcome
from mip.store import QUARANTINE, Store, quarantined

if TYPE_CHECKING:  # pandas loads when a summary is printed, not with run.py (~0.6 s of each start)
    import pandas as pd

VERDICT_COLUMNS = OUTCOMES


def verdict_table(records: Iterable[Record]) -> pd.DataFrame:
    """Experiments per pattern by verdict (invalid split by kind), with valid-only and
    all-experiment accuracy in percent (a pattern with no valid answer has no valid-only accuracy)."""
    import pandas as pd

    rows = [{"pattern": r.experiment.pattern, "verdict": outcome(r.verdict, r.invalid_kind)} for r in records]
    if not rows:
        return pd.DataFrame(columns=["pattern", *VERDICT_COLUMNS, "experiments", "valid-only acc %", "acc % (all)"])
    counts = pd.crosstab(pd.DataFrame(rows)["pattern"], pd.DataFrame(rows)["verdict"])
    counts = counts.reindex(columns=list(VERDICT_COLUMNS), fill_value=0)
    order = [p for p in PATTERNS if p in counts.index] + [p for p in counts.index if p not in PATTERNS]
    counts = counts.loc[order]
    counts["experiments"] = counts.sum(axis=1)
    valid = counts[Verdict.CORRECT] + counts[Verdict.INCORRECT]
    counts["valid-only acc %"] = (100 * counts[Verdict.CORRECT] / valid.where(valid > 0)).round(1)
    counts["acc % (all)"] = (100 * counts[Verdict.CORRECT] / counts["experiments"]).round(1)
    return counts


def _job(manifest: Path) -> dict:
    """A job's manifest, with its model's backend from the job's config.yaml beside it."""
    job = json.loads(manifest.read_text(encoding="utf-8"))
    config = manifest.parent / "config.yaml"
    if "backend" not in job and config.is_file():
        import yaml

        job["backend"] = ((yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("model") or {}).get("backend")
    return job


def records_of(manifests: Iterable[Path]) -> tuple[list[Record], list[dict]]:
    """The stored records of the jobs whose ``job.json`` manifests are given."""
    jobs = [_job(m) for m in manifests]
    records = [r for job in jobs for r in _records_by_key(Store(job["store_dir"]), set(job["keys"]))]
    return records, jobs


def _records_by_key(store: Store, keys: set[str]) -> Iterable[Record]:
    for model_dir in (d for d in store.root.iterdir() if d.is_dir()) if store.root.is_dir() else ():
        for task_dir in (d for d in model_dir.iterdir() if d.is_dir()):
            for key in keys & store.keys(model_dir.name, task_dir.name):
                record = store.get(model_dir.name, task_dir.name, key)
                if record is not None:
                    yield record


def unstored_jobs(folder: Path) -> int:
    """Jobs under ``folder`` that left experiments unstored."""
    return sum(json.loads(m.read_text(encoding="utf-8")).get("unstored", 0) > 0 for m in folder.rglob("job.json"))


def quarantine_lines(stores: list[str]) -> list[str]:
    """The damaged files a job moved aside in each store: never counted, asked again."""
    lines = []
    for store in stores:
        moved = quarantined(store)
        if moved:
            last = moved[-1]
            lines.append(f"{len(moved)} damaged file(s) in {store} were moved to {Path(store) / QUARANTINE} and asked "
                         f"again (its log.jsonl says why); the latest: {last['file']} ({last['why']}).")
    return lines


def describe(folder: Path) -> str:
    manifests = sorted(folder.rglob("job.json"))
    if not manifests:
        return f"No job manifests (job.json) under {folder}."
    records, jobs = records_of(manifests)
    experiments = sum(j["experiments"] for j in jobs)
    tokens = sum(j["prompt_tokens"] for j in jobs)
    estimated = any(j["tokens_estimated"] for j in jobs)
    lines = [f"{len(jobs)} job(s), {experiments} experiments, {tokens:,} prompt tokens"
             + (" (estimated)" if estimated else " (tokenizer-counted)")]
    lines += cost_lines(jobs)
    if all(j["dry_run"] for j in jobs):
        lines += dry_tables(jobs)
        lines.append("Dry run: no model was called.")
    else:
        lines.append(verdict_table(records).to_string())
        unstored = sum(j["unstored"] for j in jobs)
        if unstored:
            lines.append(f"{unstored} experiment(s) left unstored after infrastructure failures: rerun the same command.")
        if left := sum(j.get("left_to_other_jobs", 0) for j in jobs):
            lines.append(f"{left} experiment(s) were left to another job that was running them: rerun the same "
                         "command after it ends to pick up any it leaves unstored.")
        lines.append(f"Records: {', '.join(sorted({j['store_dir'] for j in jobs}))}")
        lines += quarantine_lines(sorted({j["store_dir"] for j in jobs}))
    lines.append(f"Job folders: {folder}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python -m mip.summary <job or sweep folder>   (e.g. results/sweeps/2026-11-30/10-00-00)",
              file=sys.stderr)
        return 2
    folder = Path(argv[0])
    if not folder.is_dir():
        print(f"error: {folder} is not a folder; pass a job or sweep folder (results/runs/… or results/sweeps/…).",
              file=sys.stderr)
        return 2
    print(describe(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
