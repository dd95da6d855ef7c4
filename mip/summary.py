"""What a job or a sweep did, as a verdict table per pattern (printed at the end of runs).

    python -m mip.summary results/sweeps/2026-11-30/10-00-00     # a sweep folder (or a job folder, or a store)

One verdict table per slice (mip.slices): a sweep over two models, budgets or prompt
variants is never pooled into one table.

Accuracies are percentages, as in the report (analyze.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mip.instances import PATTERNS
from mip.folders import WHAT_TO_PASS, Folder, FolderError, open_folder
from mip.records import Record
from mip.scoring import OUTCOMES, Verdict, outcome
from mip.store import QUARANTINE, iter_records, quarantined

if TYPE_CHECKING:  # pandas loads when a summary is printed, not with run.py (~0.6 s of each start)
    import pandas as pd

VERDICT_COLUMNS = OUTCOMES


def verdict_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Experiments per pattern by verdict (invalid split by kind), with valid-only and
    all-experiment accuracy in percent (a pattern with no valid answer has no valid-only
    accuracy), for the analysis rows (:mod:`mip.results`) of one slice."""
    import pandas as pd

    columns = ["pattern", *VERDICT_COLUMNS, "experiments", "valid-only acc %", "acc % (all)"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    kinds = frame["invalid_kind"].astype(object).where(frame["invalid_kind"].notna(), None)  # NaN: no kind
    outcomes = pd.Series([outcome(v, k) for v, k in zip(frame["verdict"], kinds)], index=frame.index, name="verdict")
    counts = pd.crosstab(frame["pattern"], outcomes).reindex(columns=list(VERDICT_COLUMNS), fill_value=0)
    order = [p for p in PATTERNS if p in counts.index] + [p for p in counts.index if p not in PATTERNS]
    counts = counts.loc[order]
    counts["experiments"] = counts.sum(axis=1)
    valid = counts[Verdict.CORRECT] + counts[Verdict.INCORRECT]
    counts["valid-only acc %"] = (100 * counts[Verdict.CORRECT] / valid.where(valid > 0)).round(1)
    counts["acc % (all)"] = (100 * counts[Verdict.CORRECT] / counts["experiments"]).round(1)
    return counts


def slice_tables(records: list[Record]) -> list[str]:
    """One verdict table per slice (:data:`mip.slices.SLICE`: model × (n, p) × budget × prompt
    variant × strategy × pool × ordering family), each headed by its slice: never two pooled."""
    from mip import slices
    from mip.results import frame_of

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
    """A job's manifest, with its model's backend from the job's config.yaml beside it."""
    config = Path(job["manifest"]).parent / "config.yaml"
    if "backend" not in job and config.is_file():
        import yaml

        job["backend"] = ((yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("model") or {}).get("backend")
    return job


def _cost_basis(job: dict) -> str:
    """How a job's model cost is counted (a manifest written before jobs said so: from its backend)."""
    if job.get("cost_basis"):
        return job["cost_basis"]
    from mip.models import BACKENDS, backend_class

    return backend_class(job["backend"]).cost_basis if job.get("backend") in BACKENDS else "price"


def cost_lines(jobs: list[dict], took_s: float | None = None) -> list[str]:
    """Per model: experiments, prompt tokens, and the expected cost where prices are set, or
    for a model run on one's own GPU (or CPU) the time it takes at the config's throughput.
    After a real run, the time it took instead (``took_s`` where the caller measured it, e.g.
    batches generated ahead of the jobs; else the jobs' own wall times).
    Prompts a dry run found overflowing the context window are never sent: they are named and
    left out of cost and time."""
    import pandas as pd

    table = pd.DataFrame([{"model": j.get("model", "?"), "experiments": j["experiments"],
                           "to run": j["experiments"] - j["already_stored"], "prompt tokens": j["prompt_tokens"],
                           "overflow": j.get("overflowing", 0) if j.get("dry_run") else 0,
                           "sent tokens": j["prompt_tokens"] - (j.get("overflow_prompt_tokens", 0) if j.get("dry_run") else 0),
                           "max output tokens": j.get("max_output_tokens", 0),
                           "in": j.get("price_input_per_mtok"), "out": j.get("price_output_per_mtok"),
                           "rate in": j.get("prompt_tokens_per_s"), "rate out": j.get("output_tokens_per_s"),
                           "device": j.get("device") or "GPU", "cost": _cost_basis(j),
                           "elapsed": j.get("elapsed_s")} for j in jobs])
    lines = []
    dry = all(j.get("dry_run") for j in jobs)
    for model, g in table.groupby("model", sort=True):
        done = g["experiments"].sum() - g["to run"].sum()
        what = (f"{g['to run'].sum()} to run, {done} already stored" if dry
                else f"{g['to run'].sum()} run by this command, {done} found already stored")
        line = f"  {model}: {g['experiments'].sum()} experiments ({what}), {g['prompt tokens'].sum():,} prompt tokens"
        if overflow := int(g["overflow"].sum()):
            line += (f"; {overflow} overflow the context window (input_overflow without a call: not sent, not "
                     f"counted); for the {g['to run'].sum() - overflow} sent ({g['sent tokens'].sum():,} prompt "
                     f"tokens): {_cost(str(model), g)}")
        elif (spent := None if dry else _spent(g, took_s)) and _timed(g):
            line += f"; {took(*spent, g['device'].iloc[0])}"  # what it took, not an estimate
        else:
            line += f"; {_cost(str(model), g)}" + (f"; {took(*spent)}" if spent else "")
        lines.append(line)
    return lines


def _spent(g: pd.DataFrame, took_s: float | None) -> tuple[float, int] | None:
    """Seconds a real run took and over how many jobs: the caller's measure, else the jobs' own."""
    if took_s is not None:
        return took_s, 1
    return (float(g["elapsed"].sum()), len(g)) if g["elapsed"].notna().all() else None


def _timed(g: pd.DataFrame) -> bool:
    """Whether a model's cost is the time it runs (no price set; a local model, or rates given)."""
    import pandas as pd

    first = g.iloc[0]
    priced = pd.notna(first["in"]) and pd.notna(first["out"])
    return not priced and (first["cost"] == "time" or (pd.notna(first["rate in"]) and pd.notna(first["rate out"])))


def _cost(model: str, g: pd.DataFrame) -> str:
    """The cost of one model's jobs, over the prompts that are sent: money at the config's
    prices, time at its throughput, or what to set."""
    import pandas as pd

    first = g.iloc[0]
    prompt, output = int(g["sent tokens"].sum()), int(g["max output tokens"].sum())
    if pd.notna(first["in"]) and pd.notna(first["out"]):
        return (f"expected cost ${prompt / 1e6 * first['in']:,.2f} input + at most ${output / 1e6 * first['out']:,.2f} "
                "output (whole budget used)")
    device = first["device"]
    if pd.notna(first["rate in"]) and pd.notna(first["rate out"]):
        hours = (prompt / first["rate in"] + output / first["rate out"]) / 3600
        return (f"{_hours(hours, device)} if every experiment uses its whole budget ({prompt:,} prompt tokens at "
                f"{first['rate in']:,.0f}/s + {output:,} output tokens at {first['rate out']:,.0f}/s on one {device}, "
                f"the rates in conf/model/{model}.yaml; set model.prompt_tokens_per_s and model.output_tokens_per_s to "
                "your measured rates)")
    if first["cost"] == "none":
        return "no cost (a scripted or simulated model, not an LLM)"
    if first["cost"] == "time":
        return (f"{device} time unknown (set model.prompt_tokens_per_s and model.output_tokens_per_s: tokens per "
                f"second on one {device})")
    return (f"cost unknown: no public price shipped in conf/model/{model}.yaml; set model.price_input_per_mtok and "
            "model.price_output_per_mtok (USD per million tokens)")


def dry_tables(jobs: list[dict]) -> list[str]:
    """Per model, a dry run's count per task (a job's totals where its manifest has no
    ``per_task``): experiments to run, prompt tokens, how many would overflow the context
    window (stored as input_overflow without a call) and output tokens at most."""
    import pandas as pd

    rows = []
    for j in jobs:
        per_task = j.get("per_task") or {"(all)": {"experiments": j["experiments"] - j["already_stored"],
                                                  "prompt_tokens": j["prompt_tokens"],
                                                  "overflowing": j.get("overflowing", 0),
                                                  "max_output_tokens": j.get("max_output_tokens", 0)}}
        rows += [{"model": j.get("model", "?"), "task": task, **counts} for task, counts in per_task.items()]
    if not rows:
        return []
    names = {"experiments": "to run", "prompt_tokens": "prompt tokens",
             "overflowing": "overflow (no call)", "max_output_tokens": "output tokens at most"}
    lines = []
    for model, g in pd.DataFrame(rows).groupby("model", sort=True):
        table = g.groupby("task", sort=True)[list(names)].sum()
        if len(table) > 1:
            table.loc["all"] = table.sum()
        table = table.rename(columns=names).map(lambda v: f"{int(v):,}").reset_index()
        lines += [f"  {model}, per task:", *("    " + row for row in table.to_string(index=False).splitlines())]
    return lines


def took(seconds: float, jobs: int, device: str | None = None) -> str:
    """What jobs that ran took, measured: their wall time (added up over several jobs), which on
    a shared machine is more than the CPU time the model used.

    >>> took(175.2, 1, "CPU")
    'took 175 s on the CPU (measured wall time)'
    >>> print(took(5400, 3))
    took 1.5 h (measured: the 3 jobs' wall times added up)
    """
    text = f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
    where = f" on the {device}" if device else ""
    how = f"measured: the {jobs} jobs' wall times added up" if jobs > 1 else "measured wall time"
    return f"took {text}{where} ({how})"


def _hours(hours: float, device: str) -> str:
    if hours >= 1:
        return f"≈ {hours:,.1f} {device}-h"
    return f"≈ {round(hours * 60)} {device}-min" if hours * 60 >= 0.5 else f"under one {device}-minute"


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


def describe(folder: Path, took_s: float | None = None) -> str:
    """What the jobs under a job or sweep folder did (or what a store holds), per slice;
    ``took_s``: the wall time the caller measured, where it is not the jobs' own."""
    try:
        opened = open_folder(folder)
    except FolderError as e:
        return str(e)
    return summarise(opened, took_s)


def summarise(opened: Folder, took_s: float | None = None) -> str:
    jobs = [_with_backend(j) for j in opened.jobs]
    damaged: list[tuple[Path, str]] = []  # listed, never moved: a reader writes nothing
    records = list(iter_records(opened.files, damaged))
    lines = []
    if jobs:
        experiments = sum(j["experiments"] for j in jobs)
        tokens = sum(j["prompt_tokens"] for j in jobs)
        estimated = any(j["tokens_estimated"] for j in jobs)
        lines.append(f"{len(jobs)} job(s), {experiments} experiments, {tokens:,} prompt tokens"
                     + (" (estimated)" if estimated else " (tokenizer-counted)"))
        lines += cost_lines(jobs, took_s)
    else:
        lines.append(f"{len(records)} stored record(s) in {opened.path}")
    if jobs and all(j["dry_run"] for j in jobs):
        lines += dry_tables(jobs)
        lines.append("Dry run: no model was called.")
    else:
        lines += slice_tables(records)
        unstored = sum(j["unstored"] for j in jobs)
        if unstored:
            lines.append(f"{unstored} experiment(s) left unstored after infrastructure failures: rerun the same command.")
        if left := sum(j.get("left_to_other_jobs", 0) for j in jobs):
            lines.append(f"{left} experiment(s) were left to another job that was running them: rerun the same "
                         "command after it ends to pick up any it leaves unstored.")
        stores = sorted({str(s) for s in opened.stores})
        lines.append(f"Records: {', '.join(stores)}")
        lines += quarantine_lines(stores)
        lines += [f"Unreadable record {path} ({why}): not counted; the next run of its job moves it aside and asks "
                  "it again." for path, why in damaged[:20]]
    if jobs:
        lines.append(f"Job folders: {opened.path}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python -m mip.summary <job, sweep or store folder>   (e.g. results/sweeps/2026-11-30/10-00-00)",
              file=sys.stderr)
        return 2
    folder = Path(argv[0])
    try:
        opened = open_folder(folder) if folder.is_dir() else None
    except FolderError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if opened is None:
        print(f"error: {folder} is not a folder; {WHAT_TO_PASS}.", file=sys.stderr)
        return 2
    print(summarise(opened))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
