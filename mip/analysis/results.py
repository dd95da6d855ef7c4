"""Records as one analysis table: from the local store (any folder holding records) or
from W&B (offline run folders on disk, or the public API).

One row per experiment key — records of the same key, read from several folders or
runs, count once. Columns: the experiment fields, ``verdict``, ``invalid_kind``,
``answer``, ``valid``, ``correct``, the counted attempt's ``reasoning`` and
``output``, token counts and ``cost``.

>>> frame = load_local(["results/store"])          # doctest: +SKIP
>>> frame.groupby("pattern").correct.mean()   # doctest: +SKIP
Exercised by ``pytest tests/test_analyze.py tests/test_matched.py``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pandas as pd

from mip.analysis import folders, setting_slices, slices
from mip.config import budgets
from mip.experiment.identity import instances_of, settings_of
from mip.experiment.records import Record, budget_limits, counted_attempt, verdicts_rule
from mip.experiment.spend import total as total_cost, usage_cost
from mip.experiment.scoring import VALID_VERDICTS, Verdict
from mip.store import QUARANTINE, quarantined
from mip.store.quarantine import moved_what

EXPERIMENT_COLUMNS = ["model", "task", "n", "p", "majority_label", "seed", "pattern", "order_seed", "prompt_variant",
                      "budget"]
COLUMNS = ["key", *EXPERIMENT_COLUMNS, "shuffle_seed", "strategy", "base_model", "pool_filtered", "pool_version",
           "pool", "family", "budget_name", "budget_tokens", "settings", "strategy_settings", "instances", "verdict",
           "invalid_kind", "answer", "valid", "correct", "reasoning", "output", "prompt_tokens", "completion_tokens",
           "reasoning_tokens", "cost", "attempts", "calls", "count_error_majority", "count_error_minority",
           "instance_accuracy", "missing_share", "position_errors"]


class ResultsError(ValueError):
    """The results cannot be analysed as asked; the message says what is missing."""


def _strategy_columns(record: Record) -> dict:
    """Beyond the paper: count errors (count_report, decomposed) and instance-level
    accuracy, missing share and per-position errors (decomposed)."""
    labels = record.instance_labels
    majority = record.experiment.majority_label
    minority = next((x for x in labels if x != majority), None)
    truth = {majority: labels.count(majority), minority: len(labels) - labels.count(majority)}
    out: dict = {}
    counts = record.reported_counts
    if record.predictions is not None:
        counts = {label: sum(p == label for p in record.predictions) for label in truth}
        errors = [None if p is None else int(p != gold) for p, gold in zip(record.predictions, labels)]
        given = [e for e in errors if e is not None]
        out.update({"instance_accuracy": 1 - sum(given) / len(given) if given else None,
                    "missing_share": errors.count(None) / len(errors), "position_errors": errors})
    if counts is not None and minority is not None:
        out.update({"count_error_majority": counts.get(majority, 0) - truth[majority],
                    "count_error_minority": counts.get(minority, 0) - truth[minority]})
    return out


def budget_labels(records: Iterable[Record]) -> dict[str, str]:
    """Each record's budget slice by its key, as the analysis table labels it (over these records
    together: :func:`mip.config.budgets.labels`) — for readers of records that build no table
    (attribute.py's replays)."""
    records = list(records)
    limits = [budget_limits(r) for r in records]
    labels = budgets.labels([r.experiment.budget for r in records], [x["budget_tokens"] for x in limits],
                            [x["budget_answer"] for x in limits], [x["budget_stated"] for x in limits])
    return {r.key: label for r, label in zip(records, labels)}


def record_row(record: Record) -> dict:
    counted = counted_attempt(record.attempts)
    stage = counted.stages[-1] if counted and counted.stages else None
    stages = [s for a in record.attempts for s in a.stages]
    return {
        **_strategy_columns(record),
        "calls": len(stages),
        "key": record.key,
        **record.experiment.model_dump(),
        **budget_limits(record),
        "pool_filtered": record.pool_filtered,
        "pool_version": record.pool_version,
        "settings": settings_of(record.config),
        "instances": instances_of(record.pool_version, record.instance_ids),
        "created_at": record.created_at,
        "verdict": record.verdict,
        "invalid_kind": record.invalid_kind,
        "answer": record.answer,
        "reasoning": stage.reasoning if stage else None,
        "output": stage.output if stage else None,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": sum(s.completion_tokens or 0 for s in stages) if stages else None,
        "reasoning_tokens": stage.reasoning_tokens if stage else None,
        "cost": total_cost(usage_cost(s.usage) for s in stages),  # usage.cost as sent: a number, or text
        "attempts": len(record.attempts),
        "key_scheme": record.key_scheme,
        "scoring_rule": verdicts_rule(record),
    }


#: Long free text (traces run to 100 KB each): kept as the Python strings they are read as.
#: pandas would copy them into Arrow strings, which took as long as reading the records.
TEXT_COLUMNS = ("reasoning", "output")


def _frame(rows: Iterable[dict], source: str) -> pd.DataFrame:
    rows = list(rows)
    texts = {column: [row.pop(column, None) for row in rows] for column in TEXT_COLUMNS}
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise ResultsError(f"No records found in {source}. Point results= at a store, a job or sweep folder, "
                           "or a folder of W&B offline runs.")
    for column, values in texts.items():
        frame[column] = pd.Series(values, index=frame.index, dtype=object)
    missing = [c for c in ["key", *EXPERIMENT_COLUMNS, "verdict"] if c not in frame.columns]
    if missing:
        raise ResultsError(f"The records in {source} lack the columns {missing}; are they mip records of this version?")
    for column in COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    frame = frame.drop_duplicates("key", keep="first").reset_index(drop=True)
    notes = _rules(frame)
    # Strategies other than the paper's single call show as their own rows in every table, and so
    # does a model run under a changed setting (mip.experiment.identity): "m [read_first=5]".
    frame["strategy"] = frame["strategy"].fillna("single_call")
    frame["settings"], frame["strategy_settings"] = setting_slices.split(frame["settings"].fillna("{}"))
    frame["base_model"] = frame["model"]
    frame["model"] = frame["model"] + setting_slices.suffixes(frame)
    other = frame["strategy"] != "single_call"
    frame.loc[other, "model"] = frame.loc[other, "model"] + " [" + frame.loc[other, "strategy"] + "]"
    frame["valid"] = frame["verdict"].isin(VALID_VERDICTS)
    frame["correct"] = frame["verdict"] == Verdict.CORRECT
    frame["order_seed"] = frame["order_seed"].astype("Int64")
    # A budget is its value: budget.max_tokens=999 over smoke is a slice of its own (mip.config.budgets).
    frame["budget_name"] = frame["budget"]
    answers, stated = (frame[c].tolist() if c in frame else None for c in ("budget_answer", "budget_stated"))
    frame["budget"] = budgets.labels(frame["budget"].tolist(), frame["budget_tokens"].tolist(), answers, stated)
    frame = slices.add_columns(frame)
    frame, dropped = _one_record(frame)
    frame = frame[COLUMNS]
    frame.attrs["notes"] = [*dropped, *notes]
    return frame


def frame_of(records: Iterable[Record], source: str) -> pd.DataFrame:
    """The analysis table of ``records`` (read elsewhere); ``source`` names them in errors."""
    return _frame((record_row(r) for r in records), source)


def _one_record(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One record per experiment (:data:`mip.analysis.pairs.IDENTITY`: the budget by its value,
    the answer-shaping settings, the instances drawn). Where the store holds several — a rerun
    under another budget name at the same limit, mip ≤ 0.2's record (key scheme 1) asked again
    under key scheme 2 — the newer key scheme's counts, then the first valid one, as the first
    valid attempt does (§3.2), then the first stored; the notes say how many were set aside."""
    from mip.analysis.pairs import IDENTITY

    identity = [c for c in IDENTITY if c in frame.columns]
    scheme = frame["key_scheme"].fillna(1) if "key_scheme" in frame else pd.Series(1, index=frame.index)
    frame = frame.assign(key_scheme=scheme)
    order = frame.assign(_scheme=-scheme.astype(float), _invalid=~frame["valid"],
                         _at=frame["created_at"].fillna("").astype(str) if "created_at" in frame else "")
    order = order.sort_values(["_scheme", "_invalid", "_at"], kind="stable")
    first = ~order.duplicated(identity, keep="first")
    if first.all():
        return frame, []
    aside = order[~first]
    kept = frame.loc[order.index[first]].sort_index().reset_index(drop=True)
    notes = []
    old = aside["key_scheme"] < scheme.max()
    if old.any():
        notes.append(f"{int(old.sum())} record(s) of mip ≤ 0.2 (key scheme 1) were left out: the same experiments "
                     "were asked again under key scheme 2, whose records are counted.")
    if (~old).any():
        twins = aside[~old]
        names = ", ".join(sorted(set(twins["budget_name"].astype(str))))
        notes.append(f"{int((~old).sum())} duplicate record(s) set aside: experiments stored twice under other keys "
                     f"(the same model, settings, instances, pattern and seeds, at the same budget value; budget names "
                     f"{names}); one record counts per experiment: the first valid one, as the first valid attempt "
                     "does (§3.2).")
        notes += _disagreeing(order, first, identity)
    return kept, notes


def _disagreeing(order: pd.DataFrame, first: pd.Series, identity: list[str]) -> list[str]:
    """A note naming the records set aside that were valid with another verdict than the one counted."""
    counted = order.groupby(identity, dropna=False, sort=False)[["valid", "verdict"]].transform("first")
    odd = order[~first & order["valid"] & counted["valid"] & (order["verdict"] != counted["verdict"])]
    keys = ", ".join(odd["key"].head(5)) + (f" and {len(odd) - 5} more" if len(odd) > 5 else "")
    return [] if odd.empty else [f"{len(odd)} duplicate record(s) set aside were valid with another verdict than the "
                                 f"record counted: {keys}; see one with `python -m mip.show KEY`."]


def _rules(frame: pd.DataFrame) -> list[str]:
    """A note where verdicts come from different answer rules."""
    if "scoring_rule" not in frame.columns:
        return []
    notes = []
    if frame["scoring_rule"].nunique(dropna=True) > 1:
        counts = frame["scoring_rule"].value_counts().sort_index()
        notes.append("Verdicts come from different answer rules: " + ", ".join(f"rule {int(k)}: {v} record(s)"
                     for k, v in counts.items()) + " (rule 1: mip ≤ 0.2, whose JSON answer search reached 2,000 "
                     "characters back; see mip.experiment.scoring).")
    if len(older := frame[frame["scoring_rule"] == 2]):
        keys = ", ".join(older["key"].head(5)) + (f" and {len(older) - 5} more" if len(older) > 5 else "")
        notes.append(f"{len(older)} record(s) of a task whose labels hold a space or a hyphen were scored under answer "
                     "rule 2, which read no answer as such a label (a parse failure): their verdicts are as stored, "
                     f"not scored again, and may differ from rule 3's: {keys}; see one with `python -m mip.show KEY`.")
    return notes


def load_local(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Every record the given folders stand for (:mod:`mip.analysis.folders`: a store, or a job or sweep
    folder's own experiments, read from the store its ``job.json`` names; several folders).
    Files that could not be read, and files a job quarantined, are listed in the frame's
    ``attrs["notes"]`` (the report's data notes), never counted."""
    try:
        opened = folders.open_folders(paths)
    except folders.FolderError as e:
        raise ResultsError(str(e)) from None
    damaged: list[tuple[Path, str]] = []
    seen: set[tuple[str, str, str]] = set()
    rows = [record_row(r) for folder in opened for r in folder.records(damaged, seen)]
    if not rows and all(folder.kind == "jobs" for folder in opened):
        raise ResultsError(f"The jobs under {', '.join(map(str, paths))} stored no records (dry runs, or nothing "
                           "finished yet); run them without dry_run=true, or pass the store.")
    frame = _frame(rows, ", ".join(map(str, paths)))
    notes = [f"Unreadable record {path} ({why}): not counted; the next run of its job asks it again."
             for path, why in damaged[:20]]
    if len(damaged) > 20:
        notes.append(f"… and {len(damaged) - 20} more unreadable records.")
    for root in sorted({store for folder in opened for store in folder.stores}):
        moved = quarantined(root)
        if moved:
            notes.append(f"{len(moved)} damaged record(s) were moved aside to {root / QUARANTINE} and asked again "
                         f"(log.jsonl there says why), e.g. {moved_what(moved[-1])}: {moved[-1]['why']}.")
    frame.attrs["notes"] = [*frame.attrs.get("notes", []), *notes]
    return frame


def _table_rows(table: dict) -> list[dict]:
    rows = []
    for values in table.get("data", []):
        row = dict(zip(table.get("columns", []), values))
        rows.append(row)
    return rows


#: Where :func:`load_wandb_api` puts the tables it downloads (one folder per run).
WANDB_DOWNLOADS = Path("/tmp/mip-wandb")


def wandb_rows(paths: Sequence[str | Path], tables: str = "*run-*/files/media/table/**/*.table.json") -> Iterator[dict]:
    """The rows of the W&B experiment tables under ``paths`` (offline run folders, or
    :data:`WANDB_DOWNLOADS` with ``tables="**/media/table/**/*.table.json"``), as dicts."""
    for root in map(Path, paths):
        for table_file in sorted(root.rglob(tables)):
            try:
                yield from _table_rows(json.loads(table_file.read_text(encoding="utf-8")))
            except (OSError, ValueError) as e:
                warnings.warn(f"Skipping unreadable W&B table {table_file}: {e}", stacklevel=2)


def load_wandb_offline(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The experiment tables of W&B runs written without network (``offline-run-*`` folders)."""
    return _frame(wandb_rows(paths), "W&B run folders under " + ", ".join(map(str, paths)))


def load_wandb_api(project: str, entity: str | None = None, group: str | None = None,
                   tags: Sequence[str] = ()) -> pd.DataFrame:
    """The experiment tables of a W&B project's runs (filtered by group and tags), via the public API;
    each table is downloaded under :data:`WANDB_DOWNLOADS` (report.html's record pages read them
    there). Tested with a stand-in API serving offline run files (tests/test_html_report.py)."""
    import wandb

    api = wandb.Api()
    filters: dict = {}
    if group:
        filters["group"] = group
    if tags:
        filters["tags"] = {"$all": list(tags)}
    rows: list[dict] = []
    for run in api.runs(f"{entity}/{project}" if entity else project, filters=filters):
        for file in run.files():
            if file.name.endswith(".table.json") and "/table/" in file.name:
                with file.download(replace=True, root=str(WANDB_DOWNLOADS / run.id)) as handle:
                    rows += _table_rows(json.load(handle))
    return _frame(rows, f"W&B project {project}")
