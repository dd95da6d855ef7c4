"""Experiment tracking: W&B mirrors the local store, which is always written first.

A null tracker stands in when logging is off, so the runner never branches on whether
a tracker exists. A W&B failure (no network, quota, crash) is reported once and turns
the tracker off; it never loses or blocks a local record.

- **Mode.** :func:`wandb_mode` is the one place that decides it: ``logger.mode`` if set,
  else ``WANDB_MODE``, else online when the user is logged in (``WANDB_API_KEY``, or a key
  ``wandb login`` saved, :func:`logged_in`) and offline otherwise.
- **The run** (:mod:`mip.tracking.wandb_run`): one per job, named after the sweep and the slice,
  rows in batches as they are stored, each once over reruns (:mod:`mip.tracking.wandb_ledger`).

    python run.py logger=wandb ...                   # online when logged in, else offline
    WANDB_MODE=offline python run.py logger=wandb    # offline, key or not

Exercised by ``pytest tests/test_tracking.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mip.experiment.records import Record
from mip.tracking.wandb_ledger import Ledger
from mip.tracking.wandb_run import (FLUSH_EVERY_ROWS, FLUSH_EVERY_S, TABLE_COLUMNS, WandbTracker, job_run_id, run_group,
                                    sync_hint, table_row)

if TYPE_CHECKING:
    from mip.config import Config
    from mip.job import JobSummary

__all__ = ["FLUSH_EVERY_ROWS", "FLUSH_EVERY_S", "TABLE_COLUMNS", "Ledger", "NullTracker", "Tracker", "WandbTracker",
           "build_tracker", "job_run_id", "logged_in", "run_group", "sync_hint", "table_row", "wandb_mode"]

MODES = {"online": "online", "run": "online", "shared": "shared", "offline": "offline", "dryrun": "offline",
         "disabled": "disabled"}
"""The values of ``logger.mode`` and ``WANDB_MODE``, read as wandb reads them."""


def logged_in() -> bool:
    """Whether wandb finds credentials (``WANDB_API_KEY``, the key ``wandb login`` saved in
    ~/.netrc or ``$NETRC``, a settings file): wandb's own ``login`` with ``prompt=False``,
    which never asks and never checks the key over the network."""
    import wandb

    try:
        try:
            return bool(wandb.login(prompt=False, verify=False))
        except TypeError:  # an older wandb, without `prompt`: the function its login reads keys with
            from wandb.sdk.lib import apikey  # type: ignore[attr-defined]

            return bool(apikey.api_key(settings=wandb.setup().settings))
    except Exception:  # noqa: BLE001 - a malformed .netrc: not logged in, and the run says it is offline
        return False


def wandb_mode(logger_mode: str | None, environ: Mapping[str, str] = os.environ,
               login: Callable[[], bool] = lambda: False) -> str:
    """The W&B mode of a job: ``logger.mode`` if set, else ``WANDB_MODE``, else ``online``
    when ``WANDB_API_KEY`` is set or ``login()`` finds a saved key, ``offline`` without.

    Whatever this returns goes to ``wandb.init(mode=…)``, which outranks the environment;
    so ``WANDB_MODE`` has to be read here, or a user's ``offline`` is overridden (a job
    without network would stall ~90 s going online because a key was set).

    >>> wandb_mode(None, {"WANDB_API_KEY": "k", "WANDB_MODE": "offline"})
    'offline'
    >>> wandb_mode("online", {"WANDB_MODE": "disabled"}), wandb_mode(None, {"WANDB_MODE": "dryrun"})
    ('online', 'offline')
    >>> wandb_mode(None, {}), wandb_mode(None, {}, login=lambda: True)
    ('offline', 'online')
    """
    for source, value in (("logger.mode", logger_mode), ("WANDB_MODE", environ.get("WANDB_MODE"))):
        if value is not None and value.strip():
            mode = MODES.get(value.strip().lower())
            if mode is None:
                raise ValueError(f"{source}={value!r} is no W&B mode; choose one of {', '.join(MODES)}.")
            return mode
    return "online" if environ.get("WANDB_API_KEY") or login() else "offline"


class Tracker(Protocol):
    mirrors: bool
    """Whether it keeps a copy of the records (and so wants the ones stored earlier too)."""
    offline_dir: Path | None
    """An offline run's folder once finished (to say how to upload it), else None."""

    def unmirrored(self, keys: Iterable[str]) -> set[str]:
        """The keys among ``keys`` that the mirror does not hold yet (to log the stored ones once)."""
        ...

    def log_record(self, record: Record, prompt: str | None) -> None: ...

    def finish(self, summary: JobSummary) -> None: ...


class NullTracker:
    """Logs nothing; the local store is written regardless."""

    mirrors = False
    offline_dir = None

    def unmirrored(self, keys: Iterable[str]) -> set[str]:
        return set()

    def log_record(self, record: Record, prompt: str | None) -> None:
        pass

    def finish(self, summary: JobSummary) -> None:
        pass


TRACKERS = ("none", "wandb")


def build_tracker(cfg: Config, output_dir: Path, environ: Mapping[str, str] = os.environ) -> Tracker:
    if cfg.logger.name == "none":
        return NullTracker()
    if cfg.logger.name == "wandb":
        mode = wandb_mode(cfg.logger.mode, environ, logged_in)
        return NullTracker() if mode == "disabled" else WandbTracker(cfg, output_dir, mode)
    raise ValueError(f"Unknown logger {cfg.logger.name!r}; choose one of {', '.join(TRACKERS)}.")
