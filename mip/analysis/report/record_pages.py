"""One experiment as the HTML report shows it: its rebuilt prompt, every attempt, the verdict,
and the trace's mentioned instance IDs marked by the report's coverage rule.

Where the records come from follows analyze.py's ``source``:

- ``local``: the records themselves (:mod:`mip.analysis.folders`), every attempt and stage;
  the prompt rebuilt as ``python -m mip.show`` rebuilds it (:class:`mip.tools.prompt_source.Rebuilder`,
  handed down by analyze.py) and its hash checked;
- ``wandb``: the rows of the W&B experiment tables, which hold the prompt as it was sent and
  the counted attempt only (W&B keeps no prompt hash and no other attempt; the page says so).

>>> view = RecordView(key="k", line="m · t", verdict="correct", answer="a", n=20, counted=1,
...                   attempts=[AttemptView("correct", "a", [StageView("s", "x", "Instance 3 and 1,2", None)])])
>>> view.mentioned, [t for t, _ in marked("IDs 3 and 30", 20)]
([1, 2, 3], ['IDs ', '3', ' and 30'])

Exercised by ``pytest tests/test_html_report.py``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mip.analysis import coverage, folders
from mip.experiment.records import Record, counted_attempt
from mip.store import iter_records
from mip.store.packs import is_pack
from mip.store.quarantine import skipped_lines

#: Lines of the prompt shown at its head and at its tail (a prompt at n = 2,000 runs to ~500 KB).
PROMPT_LINES = 60
#: Characters of an output or a trace a record page shows; the whole text is a file beside the page, linked.
CLIP_CHARS = 100_000


@dataclass
class StageView:
    name: str
    finish: str | None
    reasoning: str | None
    output: str | None
    tokens: str = ""


@dataclass
class AttemptView:
    verdict: str
    answer: str | None
    stages: list[StageView]
    invalid_kind: str | None = None


@dataclass
class RecordView:
    key: str
    line: str
    verdict: str
    answer: str | None
    n: int
    counted: int | None
    """The counted attempt, from 1 (None: none counted)."""
    attempts: list[AttemptView]
    prompt: str | None = None
    prompt_note: str = ""
    fields: dict = field(default_factory=dict)

    @property
    def trace(self) -> str | None:
        """The counted attempt's last stage's reasoning: the trace coverage reads (mip.analysis.results)."""
        if self.counted is None or not self.attempts[self.counted - 1].stages:
            return None
        return self.attempts[self.counted - 1].stages[-1].reasoning

    @property
    def mentioned(self) -> list[int]:
        return sorted(coverage.mentioned_ids(self.trace, self.n))


def marked(text: str | None, n: int) -> list[tuple[str, tuple[int, ...]]]:
    """``text`` cut into pieces, each with the IDs it mentions (none for plain text)."""
    text, out, at = text or "", [], 0
    for start, end, ids in coverage.mention_spans(text, n):
        out += [(text[at:start], ()), (text[start:end], ids)]
        at = end
    return [piece for piece in [*out, (text[at:], ())] if piece[0]]


def clipped(prompt: str, lines: int = PROMPT_LINES) -> tuple[str, int]:
    """The prompt's first and last ``lines`` lines, and how many lines were left out between."""
    rows = prompt.splitlines()
    if len(rows) <= 2 * lines + 1:
        return prompt, 0
    return "\n".join(rows[:lines] + ["[…]"] + rows[-lines:]), len(rows) - 2 * lines


def _line(e: dict) -> str:
    seeded = e.get("order_seed") is not None and str(e["order_seed"]) != "<NA>"
    order = f" order_seed={e['order_seed']}" if seeded else ""
    return (f"{e['model']} · {e['task']} · n={e['n']} p={e['p']} majority={e['majority_label']} · seed={e['seed']} "
            f"pattern={e['pattern']}{order} · {e['prompt_variant']} · budget {e['budget']}")


def view_of(record: Record, prompt: str | None, note: str) -> RecordView:
    counted = counted_attempt(record.attempts)
    attempts = []
    for a in record.attempts:
        stages = []
        for s in a.stages:
            usage = ", ".join(f"{k} {v}" for k, v in (("prompt", s.prompt_tokens), ("completion", s.completion_tokens),
                                                     ("reasoning", s.reasoning_tokens)) if v is not None)
            stages.append(StageView(s.name, s.finish_reason, s.reasoning, s.output, usage))
        attempts.append(AttemptView(str(a.verdict), a.answer, stages, a.invalid_kind))
    index = next((i for i, a in enumerate(record.attempts, 1) if a is counted), None)
    e = record.experiment.model_dump()
    return RecordView(record.key, _line(e), str(record.verdict), record.answer, record.experiment.n, index, attempts,
                      prompt, note, e)


#: Makes a record's prompt rebuilder from a folder's job task configs and its results folder:
#: (prompt or None, what was done), as :class:`mip.tools.prompt_source.Rebuilder` does (it lives above
#: analysis, which imports no tools and no strategies: analyze.py hands it down).
Rebuild = Callable[[dict, Path], Callable[[Record], tuple[str | None, str]]]


def fingerprint(record: Record) -> str:
    """What a record page is written from, as a digest: the page is written again when it changes.

    >>> from mip.experiment.records import Record
    >>> len(fingerprint(Record.model_construct(key="k")))
    20
    """
    return hashlib.blake2b(record.model_dump_json().encode(), digest_size=10).hexdigest()


def local_views(paths: Iterable[str | Path], keys: set[str], rebuild: Rebuild | None,
                pages: Known | None = None) -> Iterator[RecordView | str]:
    """The records of ``keys`` under the folders analyze.py read, each once; prompts rebuilt with ``rebuild``.
    A record whose page ``pages`` says is unchanged since it was written is yielded as its key alone
    (nothing rebuilt); a record file or pack unchanged since the last report (:func:`identity`) is not
    read again: ``pages`` knows the records it holds and their fingerprints."""
    seen: set[tuple[str, str, str]] = set()
    left = set(keys)  # each key once: the first record read of it
    skipped: dict[Path, dict[str, list[int]]] = {}
    for folder in folders.open_folders(paths):
        prompt = None  # made for the folder's first record not kept: a kept one needs no task config, no pool
        scope = "" if folder.keys is None else hashlib.blake2b("\n".join(sorted(folder.keys)).encode()).hexdigest()
        for path in folder.files:
            for model, task, key, fp, record in _held(path, folder, scope, pages, skipped):
                if (model, task, key) in seen:
                    continue
                seen.add((model, task, key))
                if key not in left:
                    continue
                left.discard(key)
                if pages is not None and pages.kept(key, fp):
                    yield key
                    continue
                if record is None:  # its file is unchanged, but its page is not there: read it
                    record = next(r for r in _read(path, folder) if (r.experiment.model, r.experiment.task,
                                                                     r.key) == (model, task, key))
                prompt = prompt or _prompts(folder, rebuild)
                yield view_of(record, *prompt(record))


class Known(Protocol):
    """What the last report knew (:class:`mip.analysis.report.kept_pages.Pages`)."""

    def kept(self, key: str, fp: str) -> bool: ...

    def held(self, name: str, identity: list) -> list[list[str]] | None: ...

    def holds(self, name: str, identity: list, records: list[list[str]]) -> None: ...


def _read(path: Path, folder: folders.Folder) -> list[Record]:
    """The readable records of one of ``folder``'s files, each once (read before: its damage was said then)."""
    return list(iter_records([path], None, folder.keys, set(), quiet=True))


def _held(path: Path, folder: folders.Folder, scope: str, pages: Known | None,
          skipped: dict[Path, dict[str, list[int]]]) -> list[tuple[str, str, str, str, Record | None]]:
    """The records ``path`` holds for ``folder``, in order: (model, task, key, fingerprint, record), the
    record None where the file is unchanged since the last report, which knew them."""
    name, now = f"{path}|{scope}", identity(path, skipped) if pages is not None else []
    known = pages.held(name, now) if pages is not None else None
    if known is not None:
        return [(model, task, key, fp, None) for model, task, key, fp in known]
    records = _read(path, folder)
    held = [[r.experiment.model, r.experiment.task, r.key, fingerprint(r) if pages is not None else ""]
            for r in records]
    if pages is not None:
        pages.holds(name, now, held)
    return [(model, task, key, fp, r) for (model, task, key, fp), r in zip(held, records)]


def identity(path: Path, skipped: dict[Path, dict[str, list[int]]]) -> list:
    """A record file's or pack's identity: its inode, size and modification time, and the lines of a pack
    the store's quarantine log skips (``skipped``: per store, read once). A pack is only ever appended to,
    and a record file is replaced whole, so the same identity holds the same records."""
    stat = path.stat()
    lines: list[int] = []
    if is_pack(path.name):
        root = path.parents[2] if len(path.parents) > 2 else path.parent
        if root not in skipped:
            skipped[root] = {}
            for file, at in skipped_lines(root):
                skipped[root].setdefault(file, []).append(at)
        lines = sorted(skipped[root].get(str(path.relative_to(root)), []))
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns, lines]


def _prompts(folder: folders.Folder, rebuild: Rebuild | None) -> Callable[[Record], tuple[str | None, str]]:
    """The prompt rebuilder of the records of ``folder``, from the task configs its jobs ran with
    (mip.show reads them so too)."""
    import yaml

    if rebuild is None:
        return lambda r: (None, "not rebuilt here: python -m mip.show prints it")
    tasks: dict[str, dict] = {}
    for job in folder.jobs:
        config = Path(job["manifest"]).parent / "config.yaml"
        if config.is_file():
            tasks.update((yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("task") or {})
    store = folder.stores[0] if folder.stores else folder.path
    return rebuild(tasks, store.parent)


def wandb_views(rows: Iterable[dict], keys: set[str]) -> Iterator[RecordView]:
    """The W&B table rows of ``keys``: the prompt as logged and the counted attempt only."""
    keys = set(keys)
    for row in rows:
        key = str(row.get("key"))
        if key not in keys:
            continue
        keys.discard(key)
        stages = [StageView(s["stage"], None, None, None) for s in json.loads(row.get("earlier_prompts") or "[]")]
        stages.append(StageView("counted", None, row.get("reasoning"), row.get("output"),
                                f"completion {row.get('completion_tokens')}, reasoning {row.get('reasoning_tokens')}"))
        total = int(row.get("attempts") or 1)
        note = (f"as logged to W&B; the W&B table keeps no prompt hash, so it is not checked, and of the {total} "
                "attempt(s) only the counted one")
        yield RecordView(key, _line(row), str(row.get("verdict")), row.get("answer"), int(row["n"]), 1,
                         [AttemptView(str(row.get("verdict")), row.get("answer"), stages, row.get("invalid_kind"))],
                         row.get("prompt"), note, dict(row))
