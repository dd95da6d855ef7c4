"""Experiment tracking. A null tracker stands in when logging is off, so the runner
never branches on whether a tracker exists (W&B arrives with its own logger config)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mip.records import Record

if TYPE_CHECKING:
    from mip.config import Config
    from mip.runner import JobSummary


class Tracker(Protocol):
    def log_record(self, record: Record) -> None: ...

    def finish(self, summary: JobSummary) -> None: ...


class NullTracker:
    """Logs nothing; the local store is always written regardless."""

    def log_record(self, record: Record) -> None:
        pass

    def finish(self, summary: JobSummary) -> None:
        pass


TRACKERS = ("none",)


def build_tracker(cfg: Config, output_dir: Path) -> Tracker:
    if cfg.logger.name == "none":
        return NullTracker()
    raise ValueError(f"Unknown logger {cfg.logger.name!r}; choose one of {', '.join(TRACKERS)}.")
