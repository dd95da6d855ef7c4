"""Stored records as a researcher reads them (``python -m mip.show``: :mod:`mip.entry.show_command`):
the records a key, a job, sweep or store folder names (:func:`find`), and each printed with its
rebuilt prompt, every attempt's output, reasoning trace, finish reason and usage, and the verdict
(:func:`render`). Records keep a prompt's hash, not its text: the prompt is rebuilt from the record,
its task config and its pool, and checked against the hash (:mod:`mip.tools.prompt_source`).

Exercised by ``pytest tests/test_show.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mip.experiment.records import Record
from mip.models import backend_class
from mip.store import Store, iter_records, read_record
from mip.store.packs import is_pack
from mip.tools.prompt_source import ShowError


# ---------------------------------------------------------------------------- finding records
def find(target: str, store: Callable[[], Path]) -> tuple[list[Record], dict[str, dict], Path, str | None]:
    """The records ``target`` names, the task configs of the jobs they came from (by task),
    the store they are in and the pool cache those jobs used (None where no job folder says);
    ``store`` gives the store a key is looked up in."""
    path = Path(target).expanduser()
    if path.is_file() and is_pack(path.name):
        records = list(iter_records([path]))
        if not records:
            raise ShowError(f"{path} holds no readable record.")
        return records, {}, path.parents[2], None
    if path.is_file() and path.suffix == ".json" and path.name != "job.json":
        record = read_record(path)
        if record is None:
            raise ShowError(f"{path} is not a readable record.")
        return [record], {}, path.parents[2], None
    if path.is_dir():
        return _in_folder(path)
    if os.sep in target or target.endswith(".json"):
        raise ShowError(f"{target} does not exist; pass a record key, a job folder or a store folder.")
    where = store()
    return [_by_key(target, where)], {}, where, None


def _in_folder(folder: Path) -> tuple[list[Record], dict[str, dict], Path, str | None]:
    """A store's records, or a job or sweep folder's own (:mod:`mip.analysis.folders`), with the task
    configs of the jobs (their ``config.yaml``)."""
    from mip.analysis.folders import FolderError, open_folder

    try:
        opened = open_folder(folder)
    except FolderError as e:
        raise ShowError(f"{e}, or a record key.") from None
    records = list(opened.records())
    if not records:
        what = ("stored no records (a dry run, or nothing finished yet)" if opened.kind == "jobs"
                else "holds no readable record")
        raise ShowError(f"{folder} {what}; pass a record key, a job folder or a store folder.")
    tasks: dict[str, dict] = {}
    cache: str | None = None
    for job in opened.jobs:
        config = Path(job["manifest"]).parent / "config.yaml"
        if config.is_file():
            import yaml

            saved = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
            tasks.update(saved.get("task") or {})
            cache = cache or (saved.get("paths") or {}).get("cache_dir")  # the pool cache the job used
    return records, tasks, opened.stores[0] if opened.stores else folder, cache


def _by_key(prefix: str, store: Path) -> Record:
    if not store.is_dir():
        raise ShowError(f"No store at {store}; pass store=<folder> or a job folder.")
    opened = Store(store, readonly=True)
    matches = sorted((key, model.name, task.name) for model in store.iterdir() if model.is_dir()
                     and not model.name.startswith(".") for task in model.iterdir() if task.is_dir()
                     for key in opened.keys(model.name, task.name) if key.startswith(prefix))
    if not matches:
        raise ShowError(f"No record with key {prefix!r} under {store}; check the key, or pass store=<folder>.")
    if len({key for key, _, _ in matches}) > 1:
        shown = ", ".join(key for key, _, _ in matches[:4]) + (", …" if len(matches) > 4 else "")
        raise ShowError(f"Key prefix {prefix!r} matches {len(matches)} records ({shown}); give more characters.")
    key, model, task = matches[0]
    record = opened.get(model, task, key)
    if record is None:
        raise ShowError(f"The record {key} in {store / model / task} cannot be read (moved aside or damaged).")
    return record


# ---------------------------------------------------------------------------- printing
def clipped(text: str, full: bool, lines: int = 12) -> str:
    """The text, or its first and last ``lines`` lines with a count of what was left out."""
    rows = text.splitlines()
    if full or len(rows) <= 2 * lines + 1:
        return text
    left_out = f"[… {len(rows) - 2 * lines} lines left out; --full prints them …]"
    return "\n".join(rows[:lines] + [left_out] + rows[-lines:])


def _count_source(record: Record) -> str:
    """How mip counted a record's prompt tokens before the call, from its model config: the
    model's own tokenizer (a local model), the tokenizer or ``/tokenize`` a server model names
    (estimated from characters where that could not be had), else estimated from characters.

    >>> _count_source(Record.model_construct(config={"model": {"backend": "openai_compat", "chars_per_token": 3.5}}))
    'estimated at 3.5 characters per token'
    >>> _count_source(Record.model_construct(config={"model": {"backend": "vllm"}}))
    "counted with the model's tokenizer"
    >>> _count_source(Record.model_construct(config={"model": {"backend": "hf", "tokenizer": None}}))
    "counted with the model's tokenizer"
    """
    model = (record.config or {}).get("model") or {}
    try:
        own = backend_class(str(model.get("backend"))).own_tokenizer
    except ValueError:  # a backend this version of mip does not know
        own = False
    if own:
        return "counted with the model's tokenizer"
    estimate = f"estimated at {model.get('chars_per_token', 3.5):g} characters per token"
    if model.get("tokenizer"):
        return f"counted with the tokenizer {model['tokenizer']} where it loaded, else {estimate}"
    if model.get("server_tokenize"):
        return "counted by the server's /tokenize"
    return estimate


def render(record: Record, prompt: str | None, full: bool) -> str:
    e = record.experiment
    verdict = record.verdict + (f" ({record.invalid_kind})" if record.invalid_kind else "")
    out = [f"== record {record.key}",
           f"{e.model} · {e.task} · n={e.n} p={e.p} majority={e.majority_label} · seed={e.seed} pattern={e.pattern}"
           f"{f' order_seed={e.order_seed}' if e.order_seed is not None else ''} · {e.prompt_variant} "
           f"· budget {e.budget}"
           f" · pool {record.pool_version}{' (filtered)' if record.pool_filtered else ''}",
           f"verdict: {verdict}; answer {record.answer!r}; {len(record.attempts)} attempt(s)"]
    if prompt is not None:
        out += [f"-- prompt ({record.prompt_tokens or '?'} tokens by mip's count before the call, "
                f"{_count_source(record)}; hash checked)", clipped(prompt, full)]
    for number, attempt in enumerate(record.attempts, 1):
        kind = f" ({attempt.invalid_kind})" if attempt.invalid_kind else ""
        out.append(f"-- attempt {number} of {len(record.attempts)}: {attempt.verdict}{kind}, answer {attempt.answer!r}")
        for stage in attempt.stages:
            usage = {k: v for k, v in (("prompt", stage.prompt_tokens), ("completion", stage.completion_tokens),
                                       ("reasoning", stage.reasoning_tokens)) if v is not None}
            reported = ", ".join(f"{k} {v}" for k, v in usage.items())
            out.append(f"   stage {stage.name}: finish {stage.finish_reason}; "
                       + (f"tokens the server reported: {reported}; " if usage else "")
                       + (f"output limit {stage.max_tokens}" if stage.max_tokens is not None else "no output limit")
                       + (f"; {stage.latency_s:.1f} s" if stage.latency_s is not None else ""))
            if stage.reasoning:
                out += ["   reasoning:", clipped(stage.reasoning, full)]
            if stage.context_refusal:  # refused as longer than the window: an input_overflow
                out += ["   refused by the server:", clipped(stage.context_refusal, full)]
            out += ["   output:", clipped(stage.output or "(empty)", full)]
    return "\n".join(out)
