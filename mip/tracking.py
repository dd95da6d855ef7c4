"""Experiment tracking: W&B mirrors the local store, which is always written first.

A null tracker stands in when logging is off, so the runner never branches on whether
a tracker exists. A W&B failure (no network, quota, crash) is reported once and turns
the tracker off; it never loses or blocks a local record.

    python run.py logger=wandb ...        # online with WANDB_API_KEY, else offline
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mip.config import to_plain
from mip.records import Record

if TYPE_CHECKING:
    from mip.config import Config
    from mip.runner import JobSummary

TABLE_COLUMNS = [
    "key", "model", "task", "pattern", "n", "p", "majority_label", "seed", "order_seed", "shuffle_seed", "prompt_variant", "budget", "strategy",
    "prompt", "reasoning", "output", "answer", "verdict", "invalid_kind", "prompt_tokens", "completion_tokens",
    "reasoning_tokens", "latency_s", "attempts",
]


class Tracker(Protocol):
    mirrors: bool
    """Whether it keeps a copy of the records (and so wants the ones stored earlier too)."""

    def log_record(self, record: Record, prompt: str | None) -> None: ...

    def finish(self, summary: JobSummary) -> None: ...


class NullTracker:
    """Logs nothing; the local store is written regardless."""

    mirrors = False

    def log_record(self, record: Record, prompt: str | None) -> None:
        pass

    def finish(self, summary: JobSummary) -> None:
        pass


def table_row(record: Record, prompt: str | None) -> list[Any]:
    """One W&B table row: the experiment, its prompt, the counted attempt's trace and verdict."""
    e = record.experiment
    counted = next((a for a in record.attempts if a.verdict != "invalid"), record.attempts[-1] if record.attempts else None)
    stage = counted.stages[-1] if counted and counted.stages else None
    return [
        record.key, e.model, e.task, e.pattern, e.n, e.p, e.majority_label, e.seed, e.order_seed, e.shuffle_seed, e.prompt_variant,
        e.budget, e.strategy, prompt, stage.reasoning if stage else None, stage.output if stage else None, record.answer,
        record.verdict, record.invalid_kind, record.prompt_tokens, stage.completion_tokens if stage else None,
        stage.reasoning_tokens if stage else None, stage.latency_s if stage else None, len(record.attempts),
    ]


class WandbTracker:
    mirrors = True

    def __init__(self, cfg: Config, output_dir: Path):
        self.rows: list[list[Any]] = []
        self.run: Any = None
        self._failed = False
        self._guard(self._init, cfg, output_dir)

    def _init(self, cfg: Config, output_dir: Path) -> None:
        import wandb

        mode = cfg.logger.mode or ("online" if os.environ.get("WANDB_API_KEY") else "offline")
        self.wandb = wandb
        self.run = wandb.init(
            project=cfg.logger.project,
            entity=cfg.logger.entity,
            group=cfg.logger.group,
            job_type=f"{cfg.model.name}/{cfg.setting}",
            name=f"{cfg.model.name}-{cfg.pattern.name}-s{cfg.seed}-{cfg.budget.name}-{cfg.prompt_variant.name}",
            tags=[cfg.model.name, cfg.pattern.name, f"seed={cfg.seed}", f"budget={cfg.budget.name}",
                  f"variant={cfg.prompt_variant.name}", f"setting={cfg.setting}", *cfg.task, *cfg.logger.tags],
            config=to_plain(cfg),
            dir=str(output_dir),
            mode=mode,
            reinit="finish_previous",  # one run per job, also when jobs share a process
            settings=wandb.Settings(silent=True),
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

    def log_record(self, record: Record, prompt: str | None) -> None:
        self.rows.append(table_row(record, prompt))
        self._guard(lambda: self.run.log({"experiments_done": len(self.rows)}))

    def finish(self, summary: JobSummary) -> None:
        def _finish() -> None:
            verdicts = [row[TABLE_COLUMNS.index("verdict")] for row in self.rows]
            valid = [v for v in verdicts if v != "invalid"]
            self.run.log({"experiments": self.wandb.Table(columns=TABLE_COLUMNS, data=self.rows)})
            self.run.summary.update({
                "experiments": len(verdicts),
                "accuracy_valid_only": valid.count("correct") / len(valid) if valid else None,
                "accuracy_all": verdicts.count("correct") / len(verdicts) if verdicts else None,
                "invalid_rate": (len(verdicts) - len(valid)) / len(verdicts) if verdicts else None,
                "unstored": summary.unstored,
            })
            self.run.finish()

        self._guard(_finish)


TRACKERS = ("none", "wandb")


def build_tracker(cfg: Config, output_dir: Path) -> Tracker:
    if cfg.logger.name == "none":
        return NullTracker()
    if cfg.logger.name == "wandb":
        return WandbTracker(cfg, output_dir)
    raise ValueError(f"Unknown logger {cfg.logger.name!r}; choose one of {', '.join(TRACKERS)}.")
