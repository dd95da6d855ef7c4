"""Reading records back for analysis: every record under folders of record files and packs,
each key once; damaged ones are listed, never moved (:mod:`mip.store.quarantine` moves them).

>>> _skipped(("m", "t", "pack-1.jsonl")), _skipped(("demo", "attribution", "replays.jsonl"))
(False, True)
>>> _skipped(("attribution", "smollm2_135m", "summary.json"))
True
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from mip.experiment.records import Record
from mip.store.packs import is_pack, lines, scan
from mip.store.quarantine import skipped_lines, why_unreadable

M = TypeVar("M", bound=BaseModel)


def read_model(path: Path, model: type[M]) -> M:
    """A stored JSON file validated against ``model``; raises ValueError or OSError when it
    cannot be read or fails its schema."""
    return model.model_validate_json(path.read_bytes())


def read_record(path: Path) -> Record | None:
    """A stored record file, or None with a warning naming the file when it is unreadable."""
    try:
        return read_model(path, Record)
    except (OSError, ValueError) as e:
        warnings.warn(f"Skipping unreadable record {path}: {why_unreadable(e)[:300]}", stacklevel=2)
        return None


def _skipped(relative: tuple[str, ...]) -> bool:
    """Files under a store or results folder that are no records: hidden files and folders
    (temporary files, attempts, quarantine, claims), job manifests, cached pools, W&B files,
    attribute.py's output (its ``summary.json``, beside a sweep's jobs) and JSON-lines files
    that are no packs (``replays.jsonl``). Judged on the path *below*
    the folder being read, so a store that itself lies under a folder named ``wandb`` or
    ``pools`` is read like any other."""
    name = relative[-1]
    return (any(part.startswith(".") for part in relative) or name == "job.json"
            or not (name.endswith(".json") or is_pack(name))
            or bool({"pools", "wandb", "attribution"} & set(relative[:-1])))


def record_files(root: Path) -> list[Path]:
    """The record files and packs under a folder, sorted."""
    return sorted(p for p in root.rglob("*.json*") if not _skipped(p.relative_to(root).parts))


def _pack_records(pack: Path, unreadable: list[tuple[Path, str]], keys: Collection[str] | None,
                  skip: dict[Path, set[tuple[str, int]]]) -> Iterator[Record]:
    store_root = pack.parents[2] if len(pack.parents) > 2 else pack.parent
    if store_root not in skip:
        skip[store_root] = skipped_lines(store_root)
    relative = str(pack.relative_to(store_root))
    # Only some keys: the pack's index says where they lie, and only their lines are read.
    found = lines(pack) if keys is None else ((line, line.read()) for key, line in scan(pack)[0]
                                               if key is None or key in keys)
    for line, data in found:
        if (relative, line.offset) in skip[store_root]:
            continue  # moved aside by a job, and listed with what was quarantined
        try:
            yield Record.model_validate_json(data)
        except ValueError as e:
            unreadable.append((pack, f"the line at byte {line.offset}: {why_unreadable(e)[:300]}"))


def iter_records(paths: Iterable[str | Path], damaged: list[tuple[Path, str]] | None = None,
                 keys: Collection[str] | None = None, seen: set[tuple[str, str, str]] | None = None,
                 quiet: bool = False) -> Iterator[Record]:
    """Every readable record under the given folders (a store, job or sweep folders) or files
    (record files, packs), each key of a model and task once; ``keys``: only these.

    A record that cannot be read or fails the schema is skipped with a warning naming it, and
    appended to ``damaged`` with the reason when a list is given. ``seen`` carries the keys
    already read over several calls. The warnings are one line per folder (:func:`say_unreadable`);
    ``quiet``: none (a second pass over what a first one said).
    """
    seen = set() if seen is None else seen
    skip: dict[Path, set[tuple[str, int]]] = {}
    unreadable: list[tuple[Path, str]] = []
    try:
        for root in map(Path, paths):
            for path in record_files(root) if root.is_dir() else [root]:
                if is_pack(path.name):
                    found: Iterable[Record] = _pack_records(path, unreadable, keys, skip)
                elif keys is not None and path.stem not in keys:
                    continue
                else:
                    try:
                        found = [read_model(path, Record)]
                    except (OSError, ValueError) as e:
                        unreadable.append((path, why_unreadable(e)[:300]))
                        continue
                for record in found:
                    identity = (record.experiment.model, record.experiment.task, record.key)
                    if identity not in seen:
                        seen.add(identity)
                        yield record
    finally:
        if damaged is not None:
            damaged += unreadable
        if not quiet:
            say_unreadable(unreadable)


def say_unreadable(unreadable: list[tuple[Path, str]]) -> None:
    """One warning line per folder for the records that could not be read (5,000 empty files
    are one line, not 5,000), once per process: the file itself where it is alone, else how
    many, by reason. Nothing is moved (:mod:`mip.store.quarantine` moves them).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     say_unreadable([(Path(f"s/m/t/e{i}.json"), "ValidationError: Invalid JSON: EOF") for i in range(3)])
    >>> [(w.filename, str(w.message)) for w in caught]
    [('s/m/t', 'Skipping 3 unreadable records here: 3 × ValidationError: Invalid JSON: EOF (the first: e0.json)')]
    """
    for folder, found in by_folder(unreadable).items():
        # The folder names the warning; line 0: no source line under it, so one line in all.
        warnings.warn_explicit(said(found), UserWarning, str(folder), 0)


def by_folder(unreadable: list[tuple[Path, str]]) -> dict[Path, list[tuple[Path, str]]]:
    """The records that could not be read, by the folder they are in."""
    folders: dict[Path, list[tuple[Path, str]]] = {}
    for path, why in unreadable:
        folders.setdefault(path.parent, []).append((path, why))
    return folders


def said(found: list[tuple[Path, str]]) -> str:
    """One line for a folder's unreadable records: the file itself where it is alone, else how
    many, by reason (at most three reasons shown)."""
    if len(found) == 1:
        return f"Skipping unreadable record {found[0][0]}: {found[0][1]}"
    return f"Skipping {len(found):,} unreadable records here: {reasons_said(found)} (the first: {found[0][0].name})"


def reasons_said(found: list[tuple[Path, str]]) -> str:
    """How many records failed for each reason, the most common first (at most three shown)."""
    reasons = Counter(re.sub(r"at byte \d+", "at byte …", why) for _, why in found).most_common()
    return "; ".join(f"{n:,} × {why[:200]}" for why, n in reasons[:3]) + ("; …" if len(reasons) > 3 else "")


def moved_said(moved: list[tuple[Path, str, str, str]], quarantine: Path) -> list[str]:
    """One line per folder and kind (``file`` or ``line``) for damaged records a job moved aside
    (``(where, kind, why, the line that says it alone)``): the record itself where it is alone,
    else how many, by reason (5,000 empty files are one line, not 5,000).

    >>> moved = [(Path(f"s/m/t/e{i}.json"), "file", "ValueError: EOF", "…") for i in range(2)]
    >>> moved_said(moved, Path("s/.q"))
    ['Moved 2 damaged files of s/m/t to s/.q (2 × ValueError: EOF); they no longer count and will be asked again.']
    """
    groups: dict[tuple[Path, str], list[tuple[Path, str, str, str]]] = {}
    for entry in moved:
        groups.setdefault((entry[0].parent, entry[1]), []).append(entry)
    return [found[0][3] if len(found) == 1 else
            f"{'Copied' if kind == 'line' else 'Moved'} {len(found):,} damaged {kind}s of {folder} to {quarantine} "
            f"({reasons_said([(path, why) for path, _, why, _ in found])}); they no longer count and will be asked "
            "again."
            for (folder, kind), found in groups.items()]
