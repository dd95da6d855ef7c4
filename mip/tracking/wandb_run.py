"""One job's W&B run: its names, its table of experiments, each row once (:mod:`mip.tracking.wandb_ledger`).

- **Names.** The group is the sweep (or single run): its folder under the results folder,
  ``sweeps/2026-11-30/10-00-00-3f9a1c``, which is what ``analyze.py source=wandb
  wandb.group=…`` takes. The job type is the job's slice (:mod:`mip.analysis.slices`) as far as a
  job knows it, ``qwen36_35b/n=2000,p=0.55/20k/standard/single_call``; the tags name both.
- **Rows as they are stored.** Rows are logged in batches, every :data:`FLUSH_EVERY_ROWS`
  records or :data:`FLUSH_EVERY_S` seconds, whichever comes first, as increments of one
  ``experiments`` table.
- **One run per job, each row once.** The run id is a hash of the job's configuration
  (:func:`job_run_id`), not of its folder, which is new at each rerun; a rerun resumes the
  run and sends only what the ledger does not hold for certain.
- **Offline.** The run's folder is kept in :attr:`WandbTracker.offline_dir`; run.py and the
  sweep's end say where it is and the ``wandb sync`` line that uploads it (:func:`sync_hint`).

Exercised by ``pytest tests/test_tracking.py tests/test_wandb_names.py``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mip.config import to_plain
from mip.experiment.identity import instances_of, settings_of
from mip.experiment.records import Record, budget_limits, counted_attempt
from mip.experiment.scoring import ACCURACIES, VALID_VERDICTS, Verdict
from mip.tracking.wandb_ledger import Ledger

if TYPE_CHECKING:
    from mip.config import Config
    from mip.job import JobSummary

TABLE_COLUMNS = [
    "key", "model", "task", "pattern", "n", "p", "majority_label", "seed", "order_seed", "shuffle_seed",
    "prompt_variant", "budget", "strategy",
    "prompt", "reasoning", "output", "answer", "verdict", "invalid_kind", "prompt_tokens", "completion_tokens",
    "reasoning_tokens", "latency_s", "attempts", "pool_filtered", "pool_version", "earlier_prompts",
    "budget_tokens", "budget_answer", "budget_stated", "settings", "instances", "created_at",
]
"""``prompt`` is the last prompt the counted attempt sent (the one the record's hash covers);
``earlier_prompts`` the prompts of its stages before that, as JSON ``[{"stage", "prompt"}]``
(self-prompting: stage one's, which asked the model to write the instruction); the ``budget_*``
limits slice budgets by their value as the store's do (:func:`mip.config.budgets.labels`)."""

FLUSH_EVERY_ROWS = 10
"""Rows held before they are logged. A killed job's run lacks at most these (the local
store has them all). A job of the paper's grid holds 10 or 30 experiments, and a row
carries its prompt (up to ~500 KB at n = 2,000) and trace: 10 rows stay a file of a few MB."""
FLUSH_EVERY_S = 60.0
"""Seconds after which held rows are logged with the next stored record, however few:
with slow models (minutes a call) rows reach W&B about as they are stored."""

#: W&B refuses a tag (and cuts a job type) past 64 characters.
MAX_NAME = 64

# Fields that change neither which experiments a job holds nor how they are asked.
_NOT_THE_JOB = ("paths", "logger", "dry_run", "progress", "infra_retries")


def job_run_id(cfg: Config) -> str:
    """The W&B run id of a job: the same for every run of the same command (whatever its
    output folder, progress bar or W&B settings), different for any other job."""
    plain = {k: v for k, v in to_plain(cfg).items() if k not in _NOT_THE_JOB}
    digest = hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()
    return f"mip-{digest[:24]}"


def run_group(folder: str | Path, results_dir: str | Path) -> str:
    """The W&B group of the jobs of a sweep (or of one run): its folder under the results folder.

    >>> run_group("results/sweeps/2026-11-30/10-00-00-3f9a1c", "results")
    'sweeps/2026-11-30/10-00-00-3f9a1c'
    >>> run_group("/elsewhere/sweeps/2026-11-30/10-00-00-3f9a1c", "results")
    'sweeps/2026-11-30/10-00-00-3f9a1c'
    """
    folder, root = Path(folder).expanduser().resolve(), Path(results_dir).expanduser().resolve()
    return (folder.relative_to(root) if folder.is_relative_to(root) else Path(*folder.parts[-3:])).as_posix()


def slice_name(cfg: Config) -> str:
    """The job's slice (model × (n, p) × budget × prompt variant × strategy), its W&B job type."""
    return (f"{cfg.model.name}/n={cfg.n},p={cfg.p:g}/{cfg.budget.name}/{cfg.prompt_variant.name}/"
            f"{cfg.strategy.name}")[:MAX_NAME]


def run_tags(cfg: Config) -> list[str]:
    """The tags of a job's run: the sweep, the slice's parts, the pattern, seed and tasks."""
    tags = [cfg.model.name, f"n={cfg.n}", f"p={cfg.p:g}", f"budget={cfg.budget.name}",
            f"variant={cfg.prompt_variant.name}", f"strategy={cfg.strategy.name}", cfg.pattern.name,
            f"seed={cfg.seed}", *cfg.task, *cfg.logger.tags]
    if cfg.logger.group:
        tags.insert(0, f"sweep={cfg.logger.group}")
    return [t[:MAX_NAME] for t in dict.fromkeys(tags)]


def sync_hint(runs: Iterable[Path], sweep: Path | None = None) -> str | None:
    """Where offline W&B runs are and the one line that uploads them (None: no offline run).
    A sweep's runs are named by one pattern under the sweep folder (`wandb sync` takes the
    ``wandb`` folders that hold runs)."""
    runs = sorted({Path(r) for r in runs})
    if not runs:
        return None
    runs = sorted({r.resolve() for r in runs})
    if sweep is not None and len(runs) > 1 and all(r.parent.parent.parent == Path(sweep).resolve() for r in runs):
        where = f"the files of its {len(runs)} runs are under {sweep}/*/wandb"
        target = f"{shlex.quote(str(sweep))}/*/wandb"
    else:
        where = f"its files are in {', '.join(map(str, runs))}"
        target = " ".join(shlex.quote(str(r)) for r in runs)
    return f"W&B ran offline: {where}. Upload them with:\n  wandb sync {target}"


def table_row(record: Record, prompt: str | None) -> list[Any]:
    """One W&B table row: the experiment, its prompts, the counted attempt's trace and verdict."""
    e = record.experiment
    counted = counted_attempt(record.attempts)
    stage = counted.stages[-1] if counted and counted.stages else None
    earlier = [{"stage": s.name, "prompt": s.prompt} for s in (counted.stages[:-1] if counted else []) if s.prompt]
    return [
        record.key, e.model, e.task, e.pattern, e.n, e.p, e.majority_label, e.seed, e.order_seed, e.shuffle_seed,
        e.prompt_variant, e.budget, e.strategy, prompt, stage.reasoning if stage else None,
        stage.output if stage else None, record.answer,
        record.verdict, record.invalid_kind, record.prompt_tokens, stage.completion_tokens if stage else None,
        stage.reasoning_tokens if stage else None, stage.latency_s if stage else None, len(record.attempts),
        record.pool_filtered, record.pool_version, json.dumps(earlier) if earlier else None,
        *budget_limits(record).values(),
        settings_of(record.config), instances_of(record.pool_version, record.instance_ids), record.created_at,
    ]


def summary_metrics(verdicts: Iterable[str]) -> dict[str, Any]:
    """The run summary's accuracies over the job's experiments (valid-only and all, §3.4 and App. D.2)."""
    verdicts = list(verdicts)
    counts = {"correct": verdicts.count(Verdict.CORRECT), "valid": sum(v in VALID_VERDICTS for v in verdicts),
              "experiments": len(verdicts)}
    return {
        "experiments": len(verdicts),
        **{f"accuracy_{name}": counts[num] / counts[den] if counts[den] else None
           for name, (num, den) in ACCURACIES.items()},
        "invalid_rate": (len(verdicts) - counts["valid"]) / len(verdicts) if verdicts else None,
    }


class WandbTracker:
    mirrors = True

    def __init__(self, cfg: Config, output_dir: Path, mode: str, flush_rows: int = FLUSH_EVERY_ROWS,
                 flush_seconds: float = FLUSH_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.run_id, self.mode = job_run_id(cfg), mode
        self.ledger = Ledger()  # read in _init, where a failure turns W&B off
        self.pending: dict[str, list[Any]] = {}
        self.sent: set[str] = set()
        """Rows this run logged (confirmed when it finishes)."""
        self.seen: dict[str, str] = {}
        """Verdicts of every record handed over, logged now or held by the run already."""
        self.flush_rows, self.flush_seconds, self.clock = flush_rows, flush_seconds, clock
        self.last_flush = clock()
        self.run: Any = None
        self.table: Any = None
        self.offline_dir: Path | None = None
        """The offline run's folder, once the run finished (what ``wandb sync`` uploads)."""
        self._failed = False
        self._guard(self._init, cfg, output_dir, mode)

    def _init(self, cfg: Config, output_dir: Path, mode: str) -> None:
        import wandb

        self.ledger = Ledger.of(cfg.logger.project, cfg.paths.results_dir, self.run_id, mode)
        self.wandb = wandb
        self.table = _increments_table(wandb)
        self.run = wandb.init(
            project=cfg.logger.project,
            entity=cfg.logger.entity,
            group=cfg.logger.group,
            job_type=slice_name(cfg),
            name=f"{cfg.model.name}-{cfg.pattern.name}-s{cfg.seed}-{cfg.budget.name}-{cfg.prompt_variant.name}",
            id=self.run_id,
            resume="allow",  # a rerun of the job continues its run
            tags=run_tags(cfg),
            config=to_plain(cfg),
            dir=str(output_dir),
            mode=mode,
            reinit="finish_previous",  # one run per job, also when jobs share a process (wandb >= 0.19.9)
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
        return set() if self._failed else {k for k in keys if k not in self.ledger.confirmed}

    def log_record(self, record: Record, prompt: str | None) -> None:
        self.seen[record.key] = record.verdict
        if self._failed or record.key in self.ledger.confirmed or record.key in self.sent or record.key in self.pending:
            return
        self.pending[record.key] = table_row(record, prompt)
        if len(self.pending) >= self.flush_rows or self.clock() - self.last_flush >= self.flush_seconds:
            self._guard(self._flush)
        else:  # progress shows at once; the rows follow with their batch
            self._guard(lambda: self.run.log({"experiments_done": len(self.seen)}))

    def _flush(self) -> None:
        """Log the held rows as the next increment of the run's table, then note them in the ledger."""
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
        self.ledger.logged({key: row[TABLE_COLUMNS.index("verdict")] for key, row in self.pending.items()})
        self.sent |= self.pending.keys()
        self.pending.clear()

    def finish(self, summary: JobSummary) -> None:
        def _finish() -> None:
            self._flush()
            verdicts = {**self.ledger.verdicts, **self.seen}
            self.run.summary.update({**summary_metrics(verdicts.values()), "unstored": summary.unstored})
            folder = Path(self.run.dir).parent  # <job>/wandb/offline-run-…/ (run.dir is its files/)
            self.run.finish()  # returns once the service wrote (offline) or uploaded (online) every row
            self.ledger.confirm(self.sent)
            if self.mode == "offline":
                self.offline_dir = folder

        self._guard(_finish)


def _increments_table(wandb: Any) -> Any:
    """An incremental table (each log adds the rows since the last), or None where wandb has none."""
    try:
        return wandb.Table(columns=TABLE_COLUMNS, log_mode="INCREMENTAL")
    except (TypeError, AssertionError, ValueError):
        return None
