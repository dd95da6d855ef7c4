"""The one check of a job's settings: everything that can be known before the job calls —
its model's schema and setup, n and p, order seeds, budget against the context window, the
strategy and prompt variant, the store folder, and its data (every task's pool is read) — in
:func:`check_job`, whose result the job runs with.

A sweep asks it of every combination of settings its jobs will run before any job is launched,
and each job run in that process runs with its combination's result (:mod:`mip.entry.sweep_checks`);
a job run alone or elsewhere asks it once itself (:func:`mip.job.run_job`). A refusal is
one exception that says what to do: ValueError (settings), DataError (data),
BackendSetupError (a package or key the model needs).

>>> checked = check_job(cfg)                 # doctest: +SKIP
>>> run_job(cfg, output_dir, checked=checked)  # doctest: +SKIP

A store folder that cannot be made is refused before anything is written:

>>> import tempfile
>>> blocker = Path(tempfile.mkdtemp()) / "a-file"
>>> _ = blocker.write_text("not a folder")
>>> store_error(blocker / "store")
Traceback (most recent call last):
ValueError: paths.store_dir=.../a-file/store cannot be a store folder (.../a-file is a file); point ...
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mip.config import Config
from mip.config.task import two_distinct_labels, unwritable_label
from mip.data import DataError, Pool, build_pool
from mip.data.pools import load_pool
from mip.data.sources import LOADERS, LOCAL_ONLY
from mip.experiment.instances import split_counts
from mip.job.tokens import budget_error
from mip.models import BackendSetupError, api_key, backend_class, check_schema
from mip.strategies import Strategy, build


@dataclass(frozen=True)
class CheckedJob:
    """What the check of a job's settings built, and the job runs with."""

    strategy: Strategy
    """Built once for the whole job (every experiment shares it)."""
    pools: dict[str, Pool]
    """Each task's pool, read (and so checked) before the job is launched."""


def check_job(cfg: Config, builds_backend: bool = True) -> CheckedJob:
    """Refuse a job whose settings cannot work, before any call; return what it runs with.
    ``builds_backend``: the job builds its model's backend from ``cfg`` (False where the caller
    hands it one), so a real run needs the backend's package and key here."""
    strategy = settings(cfg)
    for task in cfg.task.values():  # a source with no hub copy (wsd) without data_dir: said before any other is read
        if cfg.data_dir is None and task.source.loader in LOCAL_ONLY:
            LOADERS[task.source.loader](task, None)
    if not cfg.dry_run:
        store_error(Path(cfg.paths.store_dir).expanduser())
        if builds_backend:
            backend_setup(cfg)
    return CheckedJob(strategy, load_pools(cfg))


def settings(cfg: Config) -> Strategy:
    """The settings' own checks (no data read, no model loaded, no key asked): what a preflight
    request is made with too; the job's strategy."""
    check_schema(cfg.model)
    split_counts(cfg.n, cfg.p)
    if cfg.pattern.name == "random" and not cfg.order_seeds:
        raise ValueError("order_seeds is empty, so pattern random would run nothing; give its order seeds, "
                         "e.g. order_seeds=[0,1,2].")
    if cfg.max_attempts < 1 or cfg.infra_retries < 0:
        raise ValueError("max_attempts must be at least 1 and infra_retries at least 0.")
    if cfg.budget.max_tokens < 1:
        raise ValueError(f"budget.max_tokens must be positive, got {cfg.budget.max_tokens}.")
    too_big = budget_error(cfg.model.name, cfg.model.context_window, cfg.budget.name, cfg.budget.max_tokens)
    if too_big:  # a dry run too: it must say what the real run would say, not count a grid that cannot run
        raise ValueError(too_big)
    split = cfg.model.reserved_answer_tokens
    if split is not None and not 0 < split < cfg.budget.max_tokens:
        raise ValueError(f"{cfg.model.name}: budget_split.answer_tokens={split} must lie between 0 and the budget.")
    # an unknown prompt variant or strategy, or settings the strategy cannot run, are refused here
    strategy = build(cfg.strategy, cfg.prompt_variant.name)
    refusal = backend_class(cfg.model.backend).refuses(cfg)  # a model that cannot answer this job, before any call
    if refusal:
        raise ValueError(refusal)
    for task in cfg.task.values():
        if not two_distinct_labels(task.labels):
            raise ValueError(f"Task {task.name!r} needs exactly two distinct labels, got {task.labels}.")
        if (label := unwritable_label(task.labels)) is not None:
            raise ValueError(f"Task {task.name!r}: the label {label!r} cannot be written inside the answer's JSON "
                             "string as the prompt shows it (it holds a double quote, a backslash or a control "
                             "character); rename it without them.")
    return strategy


def backend_setup(cfg: Config) -> None:
    """A real run's model needs its backend's package (vLLM) and its API key here; a dry run
    builds no backend and needs neither."""
    missing = backend_class(cfg.model.backend).unavailable()
    if missing:
        raise BackendSetupError(f"{missing} (model={cfg.model.name}; dry_run=true counts its grid without it.)")
    api_key(cfg.model)


def store_error(folder: Path) -> None:
    """A store folder that cannot be made: it, or the nearest folder above it that exists, is a
    file or cannot be written. Nothing is created here (the job makes the folder, and knows a
    store it made is new); a full or read-only disk is found when the job writes its probe."""
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    why = (f"{existing} is a file" if not existing.is_dir()
           else None if os.access(existing, os.W_OK) else f"{existing} is not writable")
    if why:
        raise ValueError(f"paths.store_dir={folder} cannot be a store folder ({why}); point paths.store_dir (or "
                         "paths.results_dir) at a writable folder.")


def load_pools(cfg: Config) -> dict[str, Pool]:
    """Each task's pool: the filtered one (App. C.1) where filter.py built it and
    ``use_filtered`` is on, else the unfiltered pool."""
    if not cfg.task:
        raise ValueError("No task selected: use task=<name> or the default task=all.")
    pools = {}
    for name, task in cfg.task.items():
        pool = build_pool(task, cfg.data_dir, cfg.paths.cache_dir)
        path = Path(cfg.paths.results_dir).expanduser() / "pools" / name / f"filtered-{pool.version}.json"
        if cfg.use_filtered and path.is_file():
            filtered = load_pool(path)
            if filtered is None:
                raise ValueError(f"The filtered pool {path} is damaged; rebuild it with filter.py or pass "
                                 "use_filtered=false.")
            pool = filtered
        pools[name] = pool
    return pools


__all__ = ["CheckedJob", "DataError", "check_job", "load_pools"]
