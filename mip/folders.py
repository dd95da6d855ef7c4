"""What a folder mip wrote holds, for every reader (analyze.py, attribute.py, mip.summary,
mip.show): the one place that turns a folder into the record files it stands for.

- a store (``results/store``, or a part of one such as ``results/store/<model>``): its records;
- a job folder (``results/runs/<day>/<time>``) or a sweep folder (``results/sweeps/<day>/<time>``,
  one job folder per job): exactly the experiments its ``job.json`` manifests list, read from
  the store each manifest names — not the rest of that store;
- anything else: :class:`FolderError`, one line saying what to pass.

A folder that holds record files is read as a store, so ``results/`` (a store beside the job
folders) still reads every record. Nothing here writes.

>>> folder = open_folder("results/sweeps/2026-12-01/10-00-00")   # doctest: +SKIP
>>> len(folder.files), folder.stores                             # doctest: +SKIP

Exercised by ``pytest tests/test_folders.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mip.records import Record
from mip.store import _skipped, iter_records

#: What to pass, said by every refusal.
WHAT_TO_PASS = ("pass a store (results/store), a job folder (results/runs/<day>/<time>) or a sweep folder "
                "(results/sweeps/<day>/<time>)")


class FolderError(ValueError):
    """A folder that is no store, job or sweep folder (or names a store that is gone)."""


@dataclass
class Folder:
    """A folder mip wrote, as read back."""

    path: Path
    kind: str
    """``store`` (its own records) or ``jobs`` (the records its manifests list)."""
    files: list[Path]
    """The record files it stands for, sorted, each once."""
    stores: list[Path]
    """The stores those files lie in (where quarantined files are listed)."""
    jobs: list[dict] = field(default_factory=list)
    """The manifests (``job.json``) under it, each with ``manifest``: its path."""


def manifests(folder: Path) -> list[Path]:
    """The job manifests under ``folder`` (the folder's own ``job.json`` included)."""
    return sorted(m for m in folder.rglob("job.json") if not any(p.startswith(".") for p in m.relative_to(folder).parts))


def _job(manifest: Path) -> dict:
    return {**json.loads(manifest.read_text(encoding="utf-8")), "manifest": str(manifest)}


def _job_files(job: dict) -> list[Path]:
    """The stored record files of the experiments one manifest lists. A relative store path
    is read as the job wrote it: from the folder it ran in (Hydra keeps the working folder)."""
    store = Path(job["store_dir"]).expanduser()
    if not store.is_dir():
        if job.get("dry_run") or not job.get("keys"):
            return []  # a dry run stores nothing
        raise FolderError(f"{job['manifest']} names the store {store}, which does not exist here; "
                          "pass the store folder itself (results= / the folder argument).")
    model_dirs = [store / job["model"]] if job.get("model") and (store / job["model"]).is_dir() else \
        [d for d in store.iterdir() if d.is_dir() and not d.name.startswith(".")]
    keys = job.get("keys", [])
    return [path for model_dir in model_dirs for task_dir in sorted(model_dir.iterdir()) if task_dir.is_dir()
            for key in keys if (path := task_dir / f"{key}.json").is_file()]


def open_folder(path: str | Path) -> Folder:
    """Read ``path`` as a store, a record file, or a job or sweep folder (see the module doc)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise FolderError(f"{root} does not exist; {WHAT_TO_PASS}.")
    if root.is_file():
        return Folder(root, "store", [root], [root.parents[2]] if len(root.parents) > 2 else [])
    own = sorted(p for p in root.rglob("*.json") if not _skipped(p.relative_to(root).parts))
    jobs = [_job(m) for m in manifests(root)]
    if own:
        return Folder(root, "store", own, [root], jobs)
    if not jobs:
        raise FolderError(f"No records found in {root}: it holds no records and no job.json; {WHAT_TO_PASS}.")
    files = sorted({f for job in jobs for f in _job_files(job)})
    stores = sorted({Path(job["store_dir"]).expanduser() for job in jobs})
    return Folder(root, "jobs", files, stores, jobs)


def open_folders(paths: Iterable[str | Path]) -> list[Folder]:
    return [open_folder(p) for p in paths]


def records(paths: Iterable[str | Path], damaged: list[tuple[Path, str]] | None = None) -> Iterator[Record]:
    """Every readable record the folders stand for; unreadable files are skipped with a
    warning and listed in ``damaged`` (:func:`mip.store.iter_records`). A folder that is none
    of mip's raises here, before the first record is read."""
    files = sorted({f for folder in open_folders(paths) for f in folder.files})
    return iter_records(files, damaged)
