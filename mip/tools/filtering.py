"""Instance filtering (App. C.1): keep only the instances every filter model answers
correctly on its own, and Table 4 of their agreement.

Each pool instance is sent to each filter model as its own request, through the same
backends, retries and atomic store as experiments: a filter result is stored the moment
it arrives, so a 50,000-request stage survives a crash and a rerun pays for nothing twice.
Answers are checked at the instance level: Math's final number numerically (commas and
``$`` allowed), Occurrence's exact count of "the", the class label elsewhere.

    python filter.py task=ner filter_models=[qwen36_35b,gemini31_flash_lite]
    python filter.py task=arith filter_models=[smollm2_135m] data_dir=…     # offline, tiny

Exercised by ``pytest tests/test_filtering.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import pandas as pd
from pydantic import BaseModel, Field

from mip.experiment import prompts, scoring
from mip.store.claims import claim_experiments
from mip.config import FilterConfig, ModelConfig, TaskConfig
from mip.data import Instance, Pool, build_pool
from mip.data.pools import pool_version, save_pool
from mip.models import Backend, Request, build_backend
from mip.store import JsonFolder
from mip.job.provenance import git_commit, now
from mip.job.tokens import count_texts, output_room
from mip.models.calls import CallStats, call_with_retries
from mip.tracking import progress

FILTER_TEMPLATE_VERSION = 1
ANSWER_KINDS = ("label", "number", "count")


class FilterResult(BaseModel):
    """One filter model's answer to one instance."""

    schema_version: int = 1
    key: str
    model: str
    task: str
    instance_id: str
    pool_version: str = Field(description="The unfiltered pool the instance came from.")
    prompt_hash: str
    output: Optional[str] = None
    reasoning: Optional[str] = None
    finish_reason: Optional[str] = None
    usage: dict[str, Any] = Field(default_factory=dict)
    parsed: Optional[str] = Field(default=None, description="The answer as read, or None when unparsed.")
    truth: str = Field(description="Instance-level ground truth (number, count or label).")
    correct: bool
    git_commit: Optional[str] = None
    created_at: str


# --------------------------------------------------------------------------- prompts and checks


def instance_prompt(task: TaskConfig, text: str) -> str:
    """The single-instance question of a task (its ``filter`` text) and the answer format."""
    spec = task.filter
    example = {"label": json.dumps(task.labels[1]), "number": "42", "count": "2"}[spec.answer]
    return (f"{spec.instruction}\n"
            'Return only a JSON object with the field "answer".\n\n'
            f'Example response format:\n{{"answer": {example}}}\n\n'
            f"Instance: {text}")


def check(output: str | None, task: TaskConfig, instance: Instance) -> tuple[Optional[str], bool]:
    """``(parsed answer, correct)`` of one instance-level answer.

    label: one of the task's two labels (a tie or another label is wrong); number: equal to
    the ground truth within 1e-6 after removing ``,`` and ``$``; count: the exact integer.
    """
    kind = task.filter.answer
    if kind == "label":
        parsed = scoring.parse_answer(output, task.labels)
        return parsed, parsed == instance.label
    value = scoring.parse_number(scoring.answer_value(output))
    if value is None:
        return None, False
    parsed = f"{value:g}" if kind == "number" else str(int(value)) if value.is_integer() else f"{value:g}"
    truth = float(instance.truth)
    if kind == "count":
        return parsed, value.is_integer() and int(value) == int(truth)
    return parsed, abs(value - truth) <= 1e-6


def filter_key(model: ModelConfig, task: str, pool: str, instance_id: str, max_tokens: int) -> str:
    payload = [model.name, model.model_id, task, pool, instance_id, max_tokens, FILTER_TEMPLATE_VERSION]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:24]


# --------------------------------------------------------------------------- the store


class FilterStore(JsonFolder):
    """Filter results as one JSON file each under ``root/<model>/<task>/``, written durably;
    a file that cannot be read or fails its schema is quarantined and asked again."""

    model = FilterResult

    def put(self, result: FilterResult) -> None:
        self._put(self.path(result.model, result.task, result.key), result.model_dump_json())

    def all(self, model: str, task: str, pool_version: str) -> dict[str, FilterResult]:
        """The answers for instances of the pool ``pool_version``, by instance id."""
        out = {}
        for key in sorted(self.keys(model, task)):
            result = self.load(model, task, key)
            if result is not None and result.pool_version == pool_version:
                out[result.instance_id] = result
        return out


# --------------------------------------------------------------------------- the stage


def call_model(cfg: FilterConfig, model: ModelConfig, pools: dict[str, Pool], backend: Backend | None = None) -> dict:
    """Ask ``model`` every pool instance it has not answered yet; store each answer as it arrives."""
    store = FilterStore(cfg.paths.filter_dir)
    backend = backend or build_backend(model, cfg.paths.cache_dir)
    asked: list[tuple[str, str, TaskConfig, Instance, str]] = []
    for name, pool in pools.items():
        task = cfg.task[name]
        done = set(store.all(model.name, name, pool.version))
        for instance in pool.instances:
            if instance.id not in done:
                key = filter_key(model, name, pool.version, instance.id, cfg.max_tokens)
                asked.append((key, instance_prompt(task, instance.text), task, instance, pool.version))
    # The output limit as a job's (mip.job.tokens.output_room): the budget, never past what the
    # context window leaves after the prompt.
    tokens, _ = count_texts(backend, [prompt for _, prompt, *_ in asked], model.chars_per_token, quiet=True)
    todo = [(Request(key, prompt, output_room(n, model.context_window, cfg.max_tokens)), task, instance, version)
            for (key, prompt, task, instance, version), n in zip(asked, tokens)]
    stats = CallStats()
    left = 0
    if todo and not cfg.dry_run:
        # Another filter run asking this model now keeps what it asks (mip.store.claims).
        wanted = [r.id for r, *_ in todo]
        with claim_experiments(store.root, model.name, wanted,
                               lambda: {k for name in pools for k in store.valid_keys(model.name, name, wanted)},
                               "filter.py") as claim:
            left = len(claim.elsewhere)
            if left:
                print(f"filter/{model.name}: {left} instance(s) are being asked by another filter run now; left to it.",
                      file=sys.stderr)
            todo = [t for t in todo if t[0].id in claim.keys]
            if todo:
                _ask(cfg, model, backend, store, todo, stats)
    return {"model": model.name, "to_ask": len(todo), "calls": stats.calls, "unstored": len(stats.failed),
            "left_to_other_runs": left, "errors": stats.errors[-5:]}


def _ask(cfg: FilterConfig, model: ModelConfig, backend: Backend, store: FilterStore,
         todo: list[tuple[Request, TaskConfig, Instance, str]], stats: CallStats) -> None:
    """Ask every instance of ``todo`` and store each answer as it arrives."""
    git = git_commit().get("commit")
    backend.check()
    by_key = {r.id: (r, t, x, v) for r, t, x, v in todo}
    bar = progress.bar(len(todo), f"filter/{model.name}", "inst", cfg.progress)
    try:
        for completion in call_with_retries(backend, [r for r, *_ in todo], cfg.infra_retries, stats):
            request, task, instance, version = by_key[completion.id]
            output = completion.output if completion.finish_reason != "length" else None
            parsed, correct = check(output, task, instance)
            store.put(FilterResult(
                key=request.id, model=model.name, task=task.name, instance_id=instance.id, pool_version=version,
                prompt_hash=prompts.prompt_hash(request.prompt), output=completion.output,
                reasoning=completion.reasoning,
                finish_reason=completion.finish_reason, usage=completion.usage, parsed=parsed, truth=instance.truth,
                correct=correct, git_commit=git,
                created_at=now(),
            ))
            bar.update(1)
    finally:
        bar.close()
        backend.close()
        store.close()  # on disk, and its flushing thread ends: a process may filter again and again


def filtered_pool(pool: Pool, outcomes: dict[str, dict[str, bool]], models: Sequence[str]) -> Pool:
    """The instances of ``pool`` that every model answered correctly (pure)."""
    kept = [x for x in pool.instances if all(outcomes[m].get(x.id) for m in models)]
    labels = pool.labels
    meta = replace(pool.meta, filtered=True, sampled={label: sum(x.label == label for x in kept) for label in labels},
                   notes=[*pool.meta.notes, f"filtered from pool {pool.version} by {', '.join(models)}: "
                          f"{len(kept)} of {len(pool.instances)} kept"])
    meta.filter_models = list(models)
    meta.source_pool = pool.version
    return Pool(pool.task, labels, kept, pool_version(f"{pool.task}+filtered", labels, kept), meta)


def filtered_path(results_dir: str | Path, task: str, source_version: str) -> Path:
    return Path(results_dir).expanduser() / "pools" / task / f"filtered-{source_version}.json"


def agreement_table(outcomes: dict[str, dict[str, dict[str, bool]]], models: Sequence[str]) -> pd.DataFrame:
    """Table 4: per task, the share (and count) answered correctly by all, by none, and by
    exactly one model (each), over the instances every model answered."""
    rows = []
    for task, per_model in outcomes.items():
        ids = set.intersection(*(set(per_model[m]) for m in models))
        n = len(ids)
        if not n:
            continue
        correct = {m: {i for i in ids if per_model[m][i]} for m in models}
        everyone = set.intersection(*correct.values())
        nobody = ids - set.union(*correct.values())
        row: dict[str, Any] = {"task": task, "instances": n, "correct (all)": len(everyone),
                               "correct (all) %": 100 * len(everyone) / n, "incorrect (all)": len(nobody),
                               "incorrect (all) %": 100 * len(nobody) / n}
        for m in models:
            only = correct[m] - set.union(set(), *(correct[o] for o in models if o != m))
            row[f"only {m}"] = len(only)
            row[f"only {m} %"] = 100 * len(only) / n
        rows.append(row)
    return pd.DataFrame(rows).round(2)


def run_filter(cfg: FilterConfig, models: Sequence[ModelConfig], backends: dict[str, Backend] | None = None) -> dict:
    """The filter stage: call each filter model (``models``, the configs of
    ``cfg.filter_models``, composed by the entry point), then build the filtered pools and Table 4."""
    if not cfg.filter_models or not models:
        raise ValueError("Name the filter models: filter_models=[qwen36_35b,gemini31_flash_lite].")
    pools = {name: build_pool(task, cfg.data_dir, cfg.paths.cache_dir) for name, task in cfg.task.items()}
    for name, task in cfg.task.items():
        if task.filter.answer not in ANSWER_KINDS or not task.filter.instruction:
            raise ValueError(f"Task {name!r} has no single-instance question: set task.{name}.filter.instruction "
                             f"and filter.answer ({', '.join(ANSWER_KINDS)}).")
    report: dict[str, Any] = {"calls": []}
    if cfg.call:
        for model in models:
            report["calls"].append(call_model(cfg, model, pools, (backends or {}).get(model.name)))
    if cfg.build and not cfg.dry_run:
        store = FilterStore(cfg.paths.filter_dir)
        outcomes: dict[str, dict[str, dict[str, bool]]] = {}
        report["pools"] = {}
        for name, pool in pools.items():
            answers = {m.name: {i: r.correct for i, r in store.all(m.name, name, pool.version).items()} for m in models}
            outcomes[name] = answers
            missing = {m: len(pool.instances) - len(a) for m, a in answers.items() if len(a) < len(pool.instances)}
            if missing:
                report["pools"][name] = f"not built: instances without an answer {missing}; rerun the same command"
                continue
            kept = filtered_pool(pool, answers, [m.name for m in models])
            path = filtered_path(cfg.paths.results_dir, name, pool.version)
            save_pool(kept, path)
            report["pools"][name] = {"path": str(path), "version": kept.version, "kept": kept.meta.sampled,
                                     "of": len(pool.instances)}
        table = agreement_table(outcomes, [m.name for m in models])
        folder = Path(cfg.paths.filter_dir).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        if not table.empty:
            (folder / "table4_agreement.md").write_text(table.to_markdown(index=False) + "\n", encoding="utf-8")
            table.to_csv(folder / "table4_agreement.csv", index=False)
        report["table4"] = table.to_dict(orient="records")
    return report


def describe(report: dict) -> str:
    lines = []
    for call in report.get("calls", []):
        elsewhere = f", {call['left_to_other_runs']} left to another run" if call.get("left_to_other_runs") else ""
        lines.append(f"{call['model']}: {call['to_ask']} instances to ask, {call['calls']} calls, "
                     f"{call['unstored']} left unstored{elsewhere}")
    for task, pool in report.get("pools", {}).items():
        if isinstance(pool, str):
            lines.append(f"{task}: {pool}")
        else:
            kept = ", ".join(f"{k}: {v}" for k, v in pool["kept"].items())
            lines.append(f"{task}: filtered pool {pool['version']} keeps {kept} of {pool['of']} → {pool['path']}")
    if report.get("table4"):
        lines.append(pd.DataFrame(report["table4"]).to_markdown(index=False))
    return "\n".join(lines)

