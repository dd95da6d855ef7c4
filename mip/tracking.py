"""Experiment tracking: W&B mirrors the local store, which is always written first.

A null tracker stands in when logging is off, so the runner never branches on whether
a tracker exists. A W&B failure (no network, quota, crash) is reported once and turns
the tracker off; it never loses or blocks a local record.

- **Mode.** :func:`wandb_mode` is the one place that decides it: ``logger.mode`` if set,
  else ``WANDB_MODE``, else online with ``WANDB_API_KEY`` and offline without.
- **Rows as they are stored.** Rows are logged in batches, every :data:`FLUSH_EVERY_ROWS`
  records or :data:`FLUSH_EVERY_S` seconds, whichever comes first, as increments of one
  ``experiments`` table: a killed job's run holds every batch logged before the kill.
- **One run per job, each row once.** The run id is a hash of the job's configuration
  (:func:`job_run_id`), not of its folder, which is new at each rerun; a rerun resumes the
  run. A ledger (:class:`Ledger`, under ``<results_dir>/wandb-ledger/``) lists the keys
  each run holds, written after their batch is logged; a rerun logs only the others.

    python run.py logger=wandb ...                   # online with WANDB_API_KEY, else offline
    WANDB_MODE=offline python run.py logger=wandb    # offline, key or not

Exercised by ``pytest tests/test_tracking.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mip.config import to_plain
from mip.records import Record, counted_attempt
from mip.scoring import Verdict

if TYPE_CHECKING:
    from mip.config import Config
    from mip.job import JobSummary

TABLE_COLUMNS = [
    "key", "model", "task", "pattern", "n", "p", "majority_label", "seed", "order_seed", "shuffle_seed", "prompt_variant", "budget", "strategy",
    "prompt", "reasoning", "output", "answer", "verdict", "invalid_kind", "prompt_tokens", "completion_tokens",
    "reasoning_tokens", "latency_s", "attempts", "pool_filtered", "pool_version",
]

FLUSH_EVERY_ROWS = 10
"""Rows held before they are logged. A killed job's run lacks at most these (the local
store has them all). A job of the paper's grid holds 10 or 30 experiments, and a row
carries its prompt (up to ~500 KB at n = 2,000) and trace: 10 rows stay a file of a few MB."""
FLUSH_EVERY_S = 60.0
"""Seconds after which held rows are logged with the next stored record, however few:
with slow models (minutes a call) rows reach W&B about as they are stored."""

MODES = {"online": "online", "run": "online", "shared": "shared", "offline": "offline", "dryrun": "offline",
         "disabled": "disabled"}
"""The values of ``logger.mode`` and ``WANDB_MODE``, read as wandb reads them."""

# Fields that change neither which experiments a job holds nor how they are asked.
_NOT_THE_JOB = ("paths", "logger", "dry_run", "progress", "infra_retries")


def wandb_mode(logger_mode: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The W&B mode of a job: ``logger.mode`` if set, else ``WANDB_MODE``, else ``online``
    when ``WANDB_API_KEY`` is set and ``offline`` without it.

    Whatever this returns goes to ``wandb.init(mode=…)``, which outranks the environment;
    so ``WANDB_MODE`` has to be read here, or a user's ``offline`` is overridden (issue 19:
    a job without network stalled ~90 s going online because a key was set).

    >>> wandb_mode(None, {"WANDB_API_KEY": "k", "WANDB_MODE": "offline"})
    'offline'
    >>> wandb_mode("online", {"WANDB_MODE": "disabled"}), wandb_mode(None, {"WANDB_MODE": "dryrun"})
    ('online', 'offline')
    """
    for source, value in (("logger.mode", logger_mode), ("WANDB_MODE", environ.get("WANDB_MODE"))):
        if value is not None and value.strip():
            mode = MODES.get(value.strip().lower())
            if mode is None:
                raise ValueError(f"{source}={value!r} is no W&B mode; choose one of {', '.join(MODES)}.")
            return mode
    return "online" if environ.get("WANDB_API_KEY") else "offline"


def job_run_id(cfg: Config) -> str:
    """The W&B run id of a job: the same for every run of the same command (whatever its
    output folder, progress bar or W&B settings), different for any other job."""
    plain = {k: v for k, v in to_plain(cfg).items() if k not in _NOT_THE_JOB}
    digest = hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()
    return f"mip-{digest[:24]}"


class Ledger:
    """The experiments one W&B run holds: ``key verdict`` lines, appended after each batch
    is logged (a kill in between logs that batch again rather than losing it).

    Kept per mode: an offline run's rows reach W&B only when its folder is synced, so an
    online run of the same job does not count on them.
    """

    def __init__(self, path: Path | None = None):
        """The ledger at ``path`` (None: an empty one, never written)."""
        self.path = path
        self.verdicts: dict[str, str] = {}
        if path is not None and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                key, _, verdict = line.partition(" ")
                if key and verdict:  # a line torn by a kill is not counted
                    self.verdicts[key] = verdict

    @classmethod
    def of(cls, cfg: Config, run_id: str, mode: str) -> Ledger:
        kind = "offline" if mode == "offline" else "online"
        return cls(Path(cfg.paths.results_dir) / "wandb-ledger" / cfg.logger.project / f"{run_id}.{kind}.keys")

    def add(self, verdicts: Mapping[str, str]) -> None:
        if self.path is None:
            raise ValueError("An empty ledger is never written.")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:  # one write: lines are not interleaved
            f.write("".join(f"{key} {verdict}\n" for key, verdict in verdicts.items()))
        self.verdicts.update(verdicts)


class Tracker(Protocol):
    mirrors: bool
    """Whether it keeps a copy of the records (and so wants the ones stored earlier too)."""

    def unmirrored(self, keys: Iterable[str]) -> set[str]:
        """The keys among ``keys`` that the mirror does not hold yet (to log the stored ones once)."""
        ...

    def log_record(self, record: Record, prompt: str | None) -> None: ...

    def finish(self, summary: JobSummary) -> None: ...


class NullTracker:
    """Logs nothing; the local store is written regardless."""

    mirrors = False

    def unmirrored(self, keys: Iterable[str]) -> set[str]:
        return set()

    def log_record(self, record: Record, prompt: str | None) -> None:
        pass

    def finish(self, summary: JobSummary) -> None:
        pass


def table_row(record: Record, prompt: str | None) -> list[Any]:
    """One W&B table row: the experiment, its prompt, the counted attempt's trace and verdict."""
    e = record.experiment
    counted = counted_attempt(record.attempts)
    stage = counted.stages[-1] if counted and counted.stages else None
    return [
        record.key, e.model, e.task, e.pattern, e.n, e.p, e.majority_label, e.seed, e.order_seed, e.shuffle_seed, e.prompt_variant,
        e.budget, e.strategy, prompt, stage.reasoning if stage else None, stage.output if stage else None, record.answer,
        record.verdict, record.invalid_kind, record.prompt_tokens, stage.completion_tokens if stage else None,
        stage.reasoning_tokens if stage else None, stage.latency_s if stage else None, len(record.attempts),
        record.pool_filtered, record.pool_version,
    ]


def summary_metrics(verdicts: Iterable[str]) -> dict[str, Any]:
    """The run summary's accuracies over the job's experiments (valid-only and all, §3.4 and App. D.2)."""
    verdicts = list(verdicts)
    valid = [v for v in verdicts if v != Verdict.INVALID]  # Verdict.valid, on the ledger's strings
    return {
        "experiments": len(verdicts),
        "accuracy_valid_only": valid.count(Verdict.CORRECT) / len(valid) if valid else None,
        "accuracy_all": verdicts.count(Verdict.CORRECT) / len(verdicts) if verdicts else None,
        "invalid_rate": (len(verdicts) - len(valid)) / len(verdicts) if verdicts else None,
    }


class WandbTracker:
    mirrors = True

    def __init__(self, cfg: Config, output_dir: Path, mode: str, flush_rows: int = FLUSH_EVERY_ROWS,
                 flush_seconds: float = FLUSH_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.run_id = job_run_id(cfg)
        self.ledger = Ledger()  # read in _init, where a failure turns W&B off
        self.pending: dict[str, list[Any]] = {}
        self.seen: dict[str, str] = {}
        """Verdicts of every record handed over, logged now or held by the run already."""
        self.flush_rows, self.flush_seconds, self.clock = flush_rows, flush_seconds, clock
        self.last_flush = clock()
        self.run: Any = None
        self.table: Any = None
        self._failed = False
        self._guard(self._init, cfg, output_dir, mode)

    def _init(self, cfg: Config, output_dir: Path, mode: str) -> None:
        import wandb

        self.ledger = Ledger.of(cfg, self.run_id, mode)
        self.wandb = wandb
        self.table = _increments_table(wandb)
        self.run = wandb.init(
            project=cfg.logger.project,
            entity=cfg.logger.entity,
            group=cfg.logger.group,
            job_type=f"{cfg.model.name}/{cfg.setting}",
            name=f"{cfg.model.name}-{cfg.pattern.name}-s{cfg.seed}-{cfg.budget.name}-{cfg.prompt_variant.name}",
            id=self.run_id,
            resume="allow",  # a rerun of the job continues its run
            tags=[cfg.model.name, cfg.pattern.name, f"seed={cfg.seed}", f"budget={cfg.budget.name}",
                  f"variant={cfg.prompt_variant.name}", f"setting={cfg.setting}", *cfg.task, *cfg.logger.tags],
            config=to_plain(cfg),
            dir=str(output_dir),
            mode=mode,
            reinit="finish_previous",  # one run per job, also when jobs share a process
            # No system metadata (it holds the command line, where a key may be pasted as an
            # override) and no console capture (a server's error may echo a key): the job
            # folder keeps both, and W&B gets the redacted config and the rows only.
            settings=wandb.Settings(silent=True, x_disable_meta=True, console="off"),
        )

    def _guard(self, fn: Any, *args: Any) -> None:
        if self._failed:
            return
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - W&B must never stop the job
            self._failed = True
            print(f"W&B logging failed ({type(e).__name__}: {str(e)[:200]}); it is off for this job. "
                  "Local records are complete.", file=sys.stderr)
            try:  # close the broken run, so the next job's run starts clean
                if self.run is not None:
                    self.run.finish(exit_code=1)
            except Exception:  # noqa: BLE001 - best effort only
                pass

    def unmirrored(self, keys: Iterable[str]) -> set[str]:
        return set() if self._failed else {k for k in keys if k not in self.ledger.verdicts}

    def log_record(self, record: Record, prompt: str | None) -> None:
        self.seen[record.key] = record.verdict
        if self._failed or record.key in self.ledger.verdicts or record.key in self.pending:
            return
        self.pending[record.key] = table_row(record, prompt)
        if len(self.pending) >= self.flush_rows or self.clock() - self.last_flush >= self.flush_seconds:
            self._guard(self._flush)
        else:  # progress shows at once; the rows follow with their batch
            self._guard(lambda: self.run.log({"experiments_done": len(self.seen)}))

    def _flush(self) -> None:
        """Log the held rows as the next increment of the run's table, then record them in the ledger."""
        self.last_flush = self.clock()
        if not self.pending:
            return
        rows = list(self.pending.values())
        if self.table is not None:
            for row in rows:
                self.table.add_data(*row)
            table = self.table
        else:  # a wandb without incremental tables: one table per batch, under the same key
            table = self.wandb.Table(columns=TABLE_COLUMNS, data=rows)
        self.run.log({"experiments": table, "experiments_done": len(self.seen)})
        self.ledger.add({key: row[TABLE_COLUMNS.index("verdict")] for key, row in self.pending.items()})
        self.pending.clear()

    def finish(self, summary: JobSummary) -> None:
        def _finish() -> None:
            self._flush()
            verdicts = {**self.ledger.verdicts, **self.seen}
            self.run.summary.update({**summary_metrics(verdicts.values()), "unstored": summary.unstored})
            self.run.finish()

        self._guard(_finish)


def _increments_table(wandb: Any) -> Any:
    """An incremental table (each log adds the rows since the last), or None where wandb has none."""
    try:
        return wandb.Table(columns=TABLE_COLUMNS, log_mode="INCREMENTAL")
    except (TypeError, AssertionError, ValueError):
        return None


TRACKERS = ("none", "wandb")


def build_tracker(cfg: Config, output_dir: Path, environ: Mapping[str, str] = os.environ) -> Tracker:
    if cfg.logger.name == "none":
        return NullTracker()
    if cfg.logger.name == "wandb":
        mode = wandb_mode(cfg.logger.mode, environ)
        return NullTracker() if mode == "disabled" else WandbTracker(cfg, output_dir, mode)
    raise ValueError(f"Unknown logger {cfg.logger.name!r}; choose one of {', '.join(TRACKERS)}.")
