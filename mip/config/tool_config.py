"""The schemas of the other entry points: filter.py (App. C.1), analyze.py and attribute.py,
and the slice restriction (``where.*``) that analysis, attribution and audit share.

    python analyze.py --cfg job
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from mip.config.model import ModelConfig
from mip.config.run_config import PathsConfig
from mip.config.task import TaskConfig


@dataclass
class FilterConfig:
    """filter.py: ask each filter model every pool instance alone, then build the filtered pools."""

    task: dict[str, TaskConfig] = field(default_factory=dict)
    filter_models: list[str] = field(default_factory=list)
    paths: PathsConfig = field(default_factory=PathsConfig)
    data_dir: Optional[str] = None
    max_tokens: int = 20000
    """Output budget of each single-instance answer, reasoning included."""
    infra_retries: int = 3
    call: bool = True
    """Ask the models (false: only build from stored answers)."""
    build: bool = True
    """Build the filtered pools and Table 4 (false: only ask, e.g. one SLURM job per model)."""
    dry_run: bool = False
    progress: bool = True


@dataclass
class WandbSourceConfig:
    project: Optional[str] = None
    entity: Optional[str] = None
    group: Optional[str] = None
    tags: list[str] = field(default_factory=list)
    log_report: bool = False
    """Also log the report's tables and figures to a W&B run of the sweep's group."""


@dataclass
class WhereConfig:
    """A restriction of analysis, attribution or audit to some slices (mip.analysis.slices), from
    the shell: ``where.budget=100k where.model=[a,b]``. Each field is one value or a list;
    null keeps everything."""

    model: Any = None
    task: Any = None
    n: Any = None
    p: Any = None
    budget: Any = None
    prompt_variant: Any = None
    strategy: Any = None
    pool: Any = None
    """filtered | unfiltered."""
    family: Any = None
    """core | expanded (records with a shuffle seed)."""
    seed: Any = None
    pattern: Any = None


@dataclass
class CoverageConfig:
    """Which models the pooled trace figures and numbers pool (Figs. 5 and 22; §5.1, footnote 10)."""

    models: Optional[list[str]] = None
    """Model names to pool; null: every model whose config declares ``traces: full``."""
    model_dir: Optional[str] = None
    """Where the model configs that declare ``traces`` are; null: analyze.py's own ``conf/model``."""


@dataclass
class AnalyzeConfig:
    """analyze.py: where records come from and where the report goes."""

    source: str = "local"
    """local (records under ``results``) or wandb (offline run folders under ``results``, or the API
    with ``wandb.project``)."""
    paths: PathsConfig = field(default_factory=PathsConfig)
    """Results and cache folders (``conf/paths/default.yaml``), which the defaults below follow."""
    results: list[str] = field(default_factory=lambda: ["results/store"])
    out_dir: str = "results/report"
    filter_dir: Optional[str] = "results/filter"
    """Where filter.py wrote Table 4; it joins the report when present."""
    wandb: WandbSourceConfig = field(default_factory=WandbSourceConfig)
    where: WhereConfig = field(default_factory=WhereConfig)
    """Restrict the report to some slices, e.g. where.budget=100k where.model=[a,b]."""
    core: Optional[list[float]] = field(default_factory=lambda: [2000, 0.55])
    """The core setting [n, p] (§3.5); null: every (n, p) that a model ran with several selection seeds."""
    coverage: CoverageConfig = field(default_factory=CoverageConfig)
    """Pooled trace figures: ``coverage.models=[a,b]`` pools these models instead of the full-reasoning ones."""


@dataclass
class AttributeConfig:
    """attribute.py: which stored outputs to replay, with which weights, and where to write."""

    model: ModelConfig = field(default_factory=ModelConfig)
    task: dict[str, TaskConfig] = field(default_factory=dict)
    paths: PathsConfig = field(default_factory=PathsConfig)
    """Results and cache folders (``conf/paths/default.yaml``); converted models and pools are
    cached in ``paths.cache_dir``."""
    results: list[str] = field(default_factory=lambda: ["results/store"])
    records_model: Optional[str] = None
    """Replay the records of this model name (default: model.name) — e.g. API outputs with local weights."""
    weights: Optional[str] = None
    """Folder or hub id of the weights (default: the model's converted folder or model_id); must be on disk."""
    out_dir: str = "results/attribution"
    data_dir: Optional[str] = None
    max_replays: int = 0
    """0: every eligible record; else this many, spread round-robin over patterns, labels and seeds."""
    where: WhereConfig = field(default_factory=WhereConfig)
    """Replay only records of these slices (e.g. where.pool=filtered where.n=100)."""
    pools_dir: Optional[str] = "results/pools"
    """Where filter.py saved the filtered pools (<pools_dir>/<task>/filtered-<version>.json)."""
    dtype: Optional[str] = None
    """Weights' dtype (default: bfloat16 on a GPU, float32 on the CPU)."""
    device: Optional[str] = None
    checkpointing: bool = True
    memory: str = "auto"
    """Where a replay's memory goes on a GPU (mip.attribution.memory): auto (chosen from the free memory,
    refused with its estimate where nothing fits), gpu, offload (checkpoints in CPU memory) or shard."""
    bin_size: int = 10
    relative_bins: int = 20
