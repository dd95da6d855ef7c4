"""What a job or a sweep did, as a verdict table per pattern (printed at the end of runs, and by
``python -m mip.summary``: :mod:`mip.entry.summary_command`); what it costs, or for a dry run would
cost, is :mod:`mip.tools.costs`'s.

One verdict table per slice (mip.analysis.slices): a sweep over two models, budgets or prompt
variants is never pooled into one table.

Accuracies are percentages, as in the report (analyze.py).

>>> import pandas as pd
>>> frame = pd.DataFrame({"pattern": ["random"] * 4, "verdict": ["correct", "correct", "incorrect", "invalid"],
...                       "invalid_kind": [None, None, None, "parse"]})
>>> verdict_table(frame).loc["random", ["experiments", "valid-only acc %", "all-experiment acc %"]].tolist()
[4.0, 66.7, 50.0]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mip.tools.costs import comparison, cost_lines, dry_tables
from mip.experiment.instances import PATTERNS
from mip.analysis.folders import Folder, FolderError, open_folder
from mip.experiment.records import Record
from mip.experiment.scoring import OUTCOMES, VALID_VERDICTS, Verdict, outcome
from mip.store import QUARANTINE, quarantined
from mip.store.quarantine import moved_what
from mip.store.reading import by_folder, said

if TYPE_CHECKING:  # pandas loads when a summary is printed, not with run.py (~0.6 s of each start)
    import pandas as pd

VERDICT_COLUMNS = OUTCOMES


def verdict_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Experiments per pattern by verdict (invalid split by kind), with each accuracy of
    :data:`mip.analysis.stats.METRICS` in percent (valid-only and all-experiment; a pattern with no
    valid answer has no valid-only accuracy), for the analysis rows (:mod:`mip.analysis.results`) of one slice."""
    import pandas as pd

    from mip.analysis.stats import METRICS

    rates = {f"{m.label.replace('accuracy', 'acc')} %": m for m in METRICS.values()}  # the metric registry's
    columns = ["pattern", *VERDICT_COLUMNS, "experiments", *rates]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    kinds = frame["invalid_kind"].astype(object).where(frame["invalid_kind"].notna(), None)  # NaN: no kind
    outcomes = pd.Series([outcome(v, k) for v, k in zip(frame["verdict"], kinds)], index=frame.index, name="verdict")
    counts = pd.crosstab(frame["pattern"], outcomes).reindex(columns=list(VERDICT_COLUMNS), fill_value=0)
    order = [p for p in PATTERNS if p in counts.index] + [p for p in counts.index if p not in PATTERNS]
    counts = counts.loc[order]
    counts["experiments"] = counts.sum(axis=1)
    tally = pd.DataFrame({"correct": counts[Verdict.CORRECT], "experiments": counts["experiments"],
                          "valid": counts[sorted(VALID_VERDICTS)].sum(axis=1)})
    for column, metric in rates.items():
        counts[column] = (100 * metric.rate(tally)).round(1)
    return counts


def slice_tables(records: list[Record]) -> list[str]:
    """One verdict table per slice (:data:`mip.analysis.slices.SLICE`: model × (n, p) × budget × prompt
    variant × strategy × pool × ordering family), each headed by its slice: never two pooled."""
    from mip.analysis import slices
    from mip.analysis.results import frame_of

    if not records:
        return ["No stored records."]
    frame = frame_of(records, "the jobs' records")
    keys = ["base_model", *slices.SETTING]  # the model as run, the strategy in its own column
    lines = []
    for row, group in slices.of(frame, keys):
        lines += [f"-- slice: {slices.label({**row, 'model': row['base_model']}, slices.SLICE)}",
                  verdict_table(group).to_string()]
    return lines


def _with_backend(job: dict) -> dict:
    """A job's manifest, with its model's backend and its budget's limits (a manifest written
    before it held them) from the job's config.yaml beside it."""
    config = Path(job["manifest"]).parent / "config.yaml"
    if ("backend" not in job or "budget_tokens" not in job) and config.is_file():
        import yaml

        conf = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        model, budget = conf.get("model") or {}, conf.get("budget") or {}
        job.setdefault("backend", model.get("backend"))
        job.setdefault("budget_tokens", budget.get("max_tokens"))
        job.setdefault("budget_answer", (model.get("budget_split") or {}).get("answer_tokens"))
        job.setdefault("budget_stated", budget.get("stated_tokens"))
    return job




def unstored_jobs(folder: Path) -> int:
    """Jobs under ``folder`` that left experiments unstored."""
    return sum(json.loads(m.read_text(encoding="utf-8")).get("unstored", 0) > 0 for m in folder.rglob("job.json"))


def stopped_models(jobs: list[dict]) -> list[str]:
    """Each model a refusal no retry mends stopped (:mod:`mip.models.fail_fast`): its jobs not run
    or cut short, and the line that says the status, the provider's message and the fix.

    >>> print("\\n".join(stopped_models([{"model": "m", "refused": "model m: HTTP 403 …", "unstored": 2}])))
    Stopped model(s), their other jobs sent nothing (the rest of the sweep ran):
      m: 1 job(s), 2 experiment(s) unstored — model m: HTTP 403 …
    """
    by_model: dict[str, list[dict]] = {}
    for job in jobs:
        if job.get("refused"):
            by_model.setdefault(job.get("model") or "?", []).append(job)
    if not by_model:
        return []
    lines = ["Stopped model(s), their other jobs sent nothing (the rest of the sweep ran):"]
    for model, stopped in by_model.items():
        first = min((j["refused"] for j in stopped), key=lambda line: ("this job sent nothing" in line, line))
        first = first.split(" (job ")[0] if "this job sent nothing" in first else first
        lines.append(f"  {model}: {len(stopped)} job(s), {sum(j.get('unstored', 0) for j in stopped)} experiment(s) "
                     f"unstored — {first}")
    return lines


def refused_jobs(folder: Path) -> int:
    """Jobs under ``folder`` whose model a refusal no retry mends stopped."""
    return sum(bool(json.loads(m.read_text(encoding="utf-8")).get("refused")) for m in folder.rglob("job.json"))


def quarantine_lines(stores: list[str]) -> list[str]:
    """The damaged records a job moved aside in each store: never counted, asked again."""
    lines = []
    for store in stores:
        moved = quarantined(store)
        if moved:
            last = moved[-1]
            lines.append(f"{len(moved)} damaged record(s) in {store} were moved to {Path(store) / QUARANTINE} "
                         f"and asked again (its log.jsonl says why); the latest: {moved_what(last)} ({last['why']}).")
    return lines


def describe(folder: Path, took_s: float | None = None, sweep_s: float | None = None) -> str:
    """What the jobs under a job or sweep folder did (or what a store holds), per slice;
    ``took_s``: the wall time the caller measured, where it is not the jobs' own; ``sweep_s``:
    the sweep's own wall time, from launch to end (:func:`mip.tools.costs.cost_lines`)."""
    try:
        opened = open_folder(folder)
    except FolderError as e:
        return str(e)
    return summarise(opened, took_s, sweep_s)


def summarise(opened: Folder, took_s: float | None = None, sweep_s: float | None = None) -> str:
    jobs = [_with_backend(j) for j in opened.jobs]
    damaged: list[tuple[Path, str]] = []  # listed, never moved: a reader writes nothing
    records = list(opened.records(damaged, quiet=True))  # said below, a line a folder
    lines = []
    if jobs:
        experiments = sum(j["experiments"] for j in jobs)
        tokens = sum(j["prompt_tokens"] for j in jobs)
        estimated = any(j["tokens_estimated"] for j in jobs)
        lines.append(f"{len(jobs)} job(s), {experiments} experiments, {tokens:,} prompt tokens"
                     + (" (estimated)" if estimated else " (tokenizer-counted)"))
        lines += comparison(jobs) + cost_lines(jobs, took_s, sweep_s)
    else:
        lines.append(f"{len(records)} stored record(s) in {opened.path}")
    if jobs and all(j["dry_run"] for j in jobs):
        lines += dry_tables(jobs)
        lines.append("Dry run: no model was called.")
    else:
        lines += slice_tables(records)
        unstored = sum(j["unstored"] for j in jobs)
        stopped = sum(j["unstored"] for j in jobs if j.get("stopped_by"))
        if unstored:
            why = ("infrastructure failures" if not stopped else f"a stop ({stopped})" if stopped == unstored
                   else f"a stop ({stopped}) and infrastructure failures")
            dropped = sum(j.get("dropped", 0) for j in jobs)
            lines.append(f"{unstored} experiment(s) left unstored after {why}"
                         f"{f', {dropped} request(s) in flight dropped' if dropped else ''}: rerun the same command.")
        lines += stopped_models(jobs)
        if left := sum(j.get("left_to_other_jobs", 0) for j in jobs):
            lines.append(f"{left} experiment(s) were left to another job that was running them: rerun the same "
                         "command after it ends to pick up any it leaves unstored.")
        stores = sorted({str(s) for s in opened.stores})
        lines.append(f"Records: {', '.join(stores)}")
        lines += quarantine_lines(stores)
        lines += unreadable_lines(damaged)
    if jobs:
        lines.append(f"Job folders: {opened.path}")
    return "\n".join(lines)


def unreadable_lines(damaged: list[tuple[Path, str]]) -> list[str]:
    """The records that could not be read, one line a folder however many files it holds."""
    return [f"Unreadable record {found[0][0]} ({found[0][1]}): not counted; the next run of its job moves it aside "
            "and asks it again." if len(found) == 1 else
            said(found).replace(" here:", f" in {folder}:", 1) + "; not counted: the next run of its job moves them "
            "aside and asks them again." for folder, found in by_folder(damaged).items()]
