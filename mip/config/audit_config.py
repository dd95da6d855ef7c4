"""The schema of audit.py: a run's settings (model, budget, strategy, …, composed as in
run.py) and the audit's own under ``audit``.

    python audit.py --help
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mip.config.run_config import Config, PatternConfig


@dataclass
class AuditOptions:
    """The audit's own settings (``audit.<name>=…`` on audit.py's command line)."""

    data: Optional[str] = None
    """The table to audit (required): .csv, .tsv, .jsonl, .json or .parquet, one row per instance."""
    text_col: str = "text"
    label_col: str = "label"
    labels: list[str] = field(default_factory=list)
    """The two label values as they appear in the label column, e.g. [negative,positive]."""
    question: str = "Determine the majority label among all provided instances."
    """The task sentence of the prompt (App. B)."""
    instruction: Optional[str] = None
    """Default: 'Classify each instance independently as "<a>" or "<b>".'"""
    n: list[int] = field(default_factory=lambda: [100, 500])
    """Instance-set sizes; a size the data cannot fill is left out with a note."""
    p: list[float] = field(default_factory=lambda: [0.6, 0.7])
    """Majority proportions."""
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Selection seeds: the instance sets of each (n, p) cell; 3 seeds × 2 labels give 6 matched sets."""
    out_dir: Optional[str] = None
    """Where the jobs and audit.md go; null: <paths.results_dir>/audit/<table name>."""
    alpha: float = 0.05
    """Significance level of the verdict's paired test."""


@dataclass
class AuditConfig(Config):
    """audit.py: a run's settings (model, budget, strategy, …, composed as in run.py) and the
    audit's own under ``audit``. The audit sets n, p, seed, pattern and task of each job itself."""

    audit: AuditOptions = field(default_factory=AuditOptions)
    pattern: PatternConfig = field(default_factory=lambda: PatternConfig(name="random"))
    """Unused: the audit runs every pattern."""
    setting: str = "audit"
