"""The W&B ledger: which experiments a W&B run holds for certain, so each row reaches W&B once.

``wandb.Run.log`` only hands a row to wandb's service process, which writes it to the run's
``.wandb`` file and uploads it later: a row logged is not yet a row W&B has. So a row is
noted twice, in ``<results>/wandb-ledger/<project>/<run id>.<online|offline>``:

- ``….logged``: handed to wandb (after each batch is logged);
- ``….keys``: confirmed, once ``run.finish()`` has returned. wandb's ``finish`` returns after
  the service has written every record to the run's files and closed them (offline) or
  uploaded them (online; it waits for the file stream and the file uploads to drain,
  ``wandb/sdk/wandb_run.py`` ``Run._on_finish`` in wandb 0.31), so it is the first point at
  which W&B (or, offline, the folder ``wandb sync`` uploads) holds the rows.

A job killed in between leaves rows logged but unconfirmed; the next run of the job sends
them again, each once, and confirms them when it finishes. W&B may then hold such a row twice
(once from the killed run, once again); readers count a key once (:mod:`mip.analysis.results`).

>>> ledger = Ledger()            # an empty ledger, never written
>>> ledger.confirmed, ledger.unconfirmed
({}, {})
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def _read(path: Path | None) -> dict[str, str]:
    """``key verdict`` lines; a line torn by a kill is not counted."""
    found: dict[str, str] = {}
    if path is not None and path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, verdict = line.partition(" ")
            if key and verdict:
                found[key] = verdict
    return found


def _append(path: Path, rows: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:  # one write: lines are not interleaved
        f.write("".join(f"{key} {verdict}\n" for key, verdict in rows.items()))
        f.flush()
        os.fsync(f.fileno())


class Ledger:
    """The rows one W&B run holds for certain (:attr:`confirmed`) and those handed to wandb
    without confirmation yet (:attr:`unconfirmed`: a rerun sends them again).

    Kept per mode: an offline run's rows reach W&B only when its folder is synced, so an
    online run of the same job does not count on them.
    """

    def __init__(self, path: Path | None = None):
        """The ledger whose confirmed rows are at ``path`` (``….keys``); None: an empty one."""
        self.path = path
        self.logged_path = path.with_suffix(".logged") if path is not None else None
        self.confirmed: dict[str, str] = _read(path)
        self.unconfirmed: dict[str, str] = {k: v for k, v in _read(self.logged_path).items()
                                            if k not in self.confirmed}

    @classmethod
    def of(cls, project: str, results_dir: str, run_id: str, mode: str) -> Ledger:
        kind = "offline" if mode == "offline" else "online"
        return cls(Path(results_dir) / "wandb-ledger" / project / f"{run_id}.{kind}.keys")

    @property
    def verdicts(self) -> dict[str, str]:
        """Every row's verdict the ledger knows, confirmed or not (for the run's summary)."""
        return {**self.unconfirmed, **self.confirmed}

    def logged(self, rows: Mapping[str, str]) -> None:
        """Note rows just handed to wandb: not yet held for certain."""
        if self.logged_path is None:
            raise ValueError("An empty ledger is never written.")
        _append(self.logged_path, rows)
        self.unconfirmed.update(rows)

    def confirm(self, keys: set[str]) -> None:
        """Rows W&B holds now (called after ``run.finish()`` returned)."""
        if self.path is None:
            raise ValueError("An empty ledger is never written.")
        assert self.logged_path is not None
        if not self.unconfirmed and not self.logged_path.exists():
            return  # nothing was ever logged (a job that stored nothing): nothing to write
        rows = {k: v for k, v in self.unconfirmed.items() if k in keys}
        if rows:
            _append(self.path, rows)
        self.confirmed.update(rows)
        self.unconfirmed = {k: v for k, v in self.unconfirmed.items() if k not in keys}
        tmp = self.logged_path.with_suffix(".logged.tmp")
        tmp.write_text("".join(f"{k} {v}\n" for k, v in self.unconfirmed.items()), encoding="utf-8")
        tmp.replace(self.logged_path)  # what is still unconfirmed, whole, or the file as it was
