"""Where an analysis writes: beside the folders it reads, and never over another analysis.

The default ``out_dir`` of analyze.py (``report``) and attribute.py (``attribution``) follows
what is read (``results=[…]``, or a bare folder on the command line):

- one job or sweep folder: ``<folder>/report`` — each sweep keeps its own report;
- the default store alone (``<results_dir>/store``): ``<results_dir>/report``;
- anything else (another store, several folders): ``<results_dir>/report/<names>-<hash>``, a
  folder named after the inputs, so two analyses of different records never share one;
- from W&B (analyze.py ``source=wandb``): through the API, ``<results_dir>/report/wandb-<entity>+
  <project>+<group>+<tags>-<hash>``; offline run folders, ``<folder>/report-wandb`` beside one
  sweep or job folder, else ``<results_dir>/report/wandb-<names>-<hash>``.

>>> out_dir(["results/store"], "results", "report")
'results/report'
>>> out_dir(["results/store", "other/store"], "results", "report")  # doctest: +ELLIPSIS
'results/report/store+store-...'
>>> group = "sweeps/2026-11-30/10-00-00-3f9a1c"
>>> out_dir(["results/store"], "results", "report", "wandb", "mip", None, group, [])  # doctest: +ELLIPSIS
'results/report/wandb-mip+sweeps_2026-11-30_10-00-00-3f9a1c-...'

An out_dir remembers what it was written from (``.inputs.json``: the source, the folders, the
slices); an analysis of other inputs into it is refused (:func:`claim`), with what to do.

Exercised by ``pytest tests/test_report_dirs.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

#: The note an out_dir keeps of the analysis written there (hidden: no reader takes it for a record).
INPUTS = ".inputs.json"


def is_jobs_folder(folder: Path) -> bool:
    """A job folder (its ``job.json``) or a sweep folder (one job folder per job)."""
    return (folder / "job.json").is_file() or any(folder.glob("*/job.json"))


def out_dir(results: Sequence[Any], results_dir: str, name: str, source: str = "local", *wandb: Any) -> str:
    """The default out_dir for an analysis of ``results`` (see the module doc); ``name``:
    ``report`` or ``attribution``; ``source`` and ``wandb`` (its project, entity, group and
    tags), analyze.py's W&B source. Used as the resolver
    ``${out_dir:${results},${paths.results_dir},report,${source},${wandb.project},…}``."""
    inputs = [str(r) for r in results]
    base = Path(results_dir) / name
    if source == "wandb":
        return _wandb_dir(inputs, base, name, *wandb)
    if len(inputs) == 1 and is_jobs_folder(Path(inputs[0]).expanduser()):
        return str(Path(inputs[0]) / name)
    if [_same(i) for i in inputs] == [_same(str(Path(results_dir) / "store"))]:
        return str(base)
    return str(base / _named(map(_last, inputs), [_same(i) for i in inputs]))


def _wandb_dir(inputs: list[str], base: Path, name: str, project: Any = None, entity: Any = None, group: Any = None,
               tags: Any = ()) -> str:
    """A W&B analysis: from the API, ``<results>/report/wandb-<entity>+<project>+<group>+<tags>-<hash>``
    (two projects, groups or tag sets, two folders); from offline run folders,
    ``<sweep>/<name>-wandb`` beside one sweep or job folder (a local analysis of it keeps
    ``<sweep>/<name>``), else ``<results>/report/wandb-<folders>-<hash>``."""
    if project:
        parts = [str(p) for p in (entity, project, group, *(tags or ())) if p]
        return str(base / ("wandb-" + _named((p.replace("/", "_") for p in parts), parts)))
    if len(inputs) == 1 and is_jobs_folder(Path(inputs[0]).expanduser()):
        return str(Path(inputs[0]) / f"{name}-wandb")
    return str(base / ("wandb-" + _named(map(_last, inputs), [_same(i) for i in inputs])))


def _named(names: Iterable[str], identity: list[str]) -> str:
    """``<names>-<hash>``: the inputs' names, joined and cut to 60 characters, and a digest of what they are."""
    digest = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:6]
    return f"{'+'.join(names)[:60]}-{digest}"


def _last(path: str) -> str:
    return Path(os.path.normpath(path)).name or "root"


def _same(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def inputs_of(source: str, results: Sequence[str], **more: Any) -> dict[str, Any]:
    """What an analysis reads and keeps, as :func:`claim` compares it: local folders by their
    absolute paths, and any further settings (slices, the core, a W&B group) as given."""
    return {"source": source, "results": [_same(str(r)) for r in results], **more}


def taken(folder: str | Path, inputs: dict[str, Any]) -> str | None:
    """Why ``folder`` cannot take an analysis of ``inputs`` — it holds the output of an analysis
    of other inputs (said with what to pass instead) — or None; reads only. Asked by the entry
    points before Hydra writes into the folder (mip.entry.reports), and by :func:`claim`."""
    folder = Path(folder).expanduser()
    try:
        before = json.loads((folder / INPUTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if before == json.loads(json.dumps(inputs, default=str)):
        return None
    shown = ",".join(before.get("results", [])) if before.get("source") == "local" else before.get("source")
    return (f"{folder} holds the output of another analysis (results=[{shown}]"
            f"{', other slices or core' if before.get('results') == inputs.get('results') else ''}); pass another "
            f"out_dir=, or leave out_dir to write beside the folders read; remove {folder} to write there again.")


def claim(folder: str | Path, inputs: dict[str, Any]) -> str | None:
    """Take ``folder`` for an analysis of ``inputs``: note them there, or return why not (:func:`taken`)."""
    if refusal := taken(folder, inputs):
        return refusal
    folder = Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / INPUTS).write_text(json.dumps(inputs, indent=1, default=str), encoding="utf-8")
    return None
