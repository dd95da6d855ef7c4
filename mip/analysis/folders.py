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

Exercised by ``pytest tests/test_readback.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mip.experiment.records import Record
from mip.store import iter_records, record_files
from mip.store.packs import is_pack

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
    """The record files and packs it reads, sorted, each once."""
    stores: list[Path]
    """The stores those files lie in (where quarantined files are listed)."""
    jobs: list[dict] = field(default_factory=list)
    """The manifests (``job.json``) under it, each with ``manifest``: its path."""
    keys: frozenset[str] | None = None
    """The keys its jobs cover, read from ``files`` (None for a store: every key)."""

    def records(self, damaged: list[tuple[Path, str]] | None = None,
                seen: set[tuple[str, str, str]] | None = None, quiet: bool = False) -> Iterator[Record]:
        """Its readable records, each once (:func:`mip.store.iter_records`; ``quiet``: no warning)."""
        return iter_records(self.files, damaged, self.keys, seen, quiet)


def _job(manifest: Path) -> dict:
    return {**json.loads(manifest.read_text(encoding="utf-8")), "manifest": str(manifest)}


def store_of(job: dict) -> Path:
    """The store a manifest names. A relative path (``results/store``) was relative to the folder
    the job ran in, which is where its ``output_dir`` (relative too) was: it is found from the job
    folder itself, wherever one reads from. So is an absolute one that is gone when the results
    folder was moved as a whole."""
    named = Path(job["store_dir"]).expanduser()
    if named.is_absolute() and named.is_dir():
        return named
    beside = Path(job["manifest"]).parent / os.path.relpath(named, Path(job.get("output_dir") or ".").expanduser())
    return Path(os.path.normpath(beside)) if beside.is_dir() else named


def _job_files(job: dict) -> list[Path]:
    """The record files and packs that may hold the experiments one manifest lists: the
    packs of its model's task folders, and the record files named by its keys."""
    store = store_of(job)
    if not store.is_dir():
        if job.get("dry_run") or not job.get("keys"):
            return []  # a dry run stores nothing
        raise FolderError(f"{job['manifest']} names the store {job['store_dir']}, which is not there; "
                          "pass the store folder itself.")
    model_dirs = [store / job["model"]] if job.get("model") and (store / job["model"]).is_dir() else \
        [d for d in store.iterdir() if d.is_dir() and not d.name.startswith(".")]
    keys = job.get("keys", [])
    task_dirs = [d for model_dir in model_dirs for d in sorted(model_dir.iterdir()) if d.is_dir()]
    packs = [d / name for d in task_dirs for name in sorted(os.listdir(d)) if is_pack(name)] if keys else []
    return packs + [path for d in task_dirs for key in keys if (path := d / f"{key}.json").is_file()]


def open_folder(path: str | Path) -> Folder:
    """Read ``path`` as a store, a record file, or a job or sweep folder (see the module doc)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise FolderError(f"{root} does not exist; {WHAT_TO_PASS}.")
    if root.is_file():
        return Folder(root, "store", [root], [root.parents[2]] if len(root.parents) > 2 else [])
    own = record_files(root)
    jobs = [_job(p) for p in sorted(root.rglob("job.json"))
            if not any(x.startswith(".") for x in p.relative_to(root).parts)]
    if own:
        return Folder(root, "store", own, [root], jobs)
    if not jobs:
        raise FolderError(f"No records found in {root}: it holds no records and no job.json; {WHAT_TO_PASS}.")
    files = sorted({f for job in jobs for f in _job_files(job)})
    keys = frozenset(k for job in jobs for k in job.get("keys", []))
    return Folder(root, "jobs", files, sorted({store_of(job) for job in jobs}), jobs, keys)


def open_folders(paths: Iterable[str | Path]) -> list[Folder]:
    return [open_folder(p) for p in paths]


def records(paths: Iterable[str | Path], damaged: list[tuple[Path, str]] | None = None) -> Iterator[Record]:
    """Every readable record the folders stand for; unreadable files are skipped with a
    warning and listed in ``damaged`` (:func:`mip.store.iter_records`). A folder that is none
    of mip's raises here, before the first record is read."""
    seen: set[tuple[str, str, str]] = set()
    return (record for folder in open_folders(paths) for record in folder.records(damaged, seen))
