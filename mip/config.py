"""Structured config: the dataclass schemas that the YAML files under ``conf/`` extend.

They are registered in Hydra's ConfigStore as ``config_schema`` (the primary config's
base), so a wrong key or type in any YAML file or override fails at composition time,
on the login node, before anything runs. Entry points turn the composed config into a
:class:`Config` once (``OmegaConf.to_object``); ``mip`` works on these objects only.

    python run.py --cfg job             # print the composed config
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class SourceConfig:
    """Where a task's rows come from and how they are read (see :mod:`mip.data.sources`)."""

    loader: str = MISSING
    """Registry name: gsm8k, wikiann, tweeteval_the, sst2, coarsewsd_java, table, synthetic_arith."""
    hub_path: Optional[str] = None
    hub_name: Optional[str] = None
    hub_splits: list[str] = field(default_factory=list)
    local_dir: str = ""
    """Folder under ``data_dir`` holding the native files."""
    local_files: list[str] = field(default_factory=list)
    """Files (or split names, for loaders that derive file names) under ``local_dir``."""
    subsets: list[str] = field(default_factory=list)
    """TweetEval subsets read first."""
    fallback_subsets: list[str] = field(default_factory=list)
    """TweetEval subsets pooled in when ``subsets`` hold too few tweets of a label."""
    path: Optional[str] = None
    """table loader: a .csv, .tsv, .jsonl or .parquet file."""
    text_column: str = "text"
    label_column: str = "label"
    label_map: dict[str, str] = field(default_factory=dict)
    """table loader: raw label value → task label; empty means the values are the labels."""
    size: int = 0
    """synthetic loader: rows to generate (0: four times the pool size)."""


@dataclass
class PromptSpec:
    """The task-specific text of the App. B templates. The templates are Python (mip.prompts)."""

    task: str = MISSING
    """The sentence after ``Task:``."""
    instructions: list[str] = field(default_factory=list)
    """Task-specific instruction lines, before "Count how many instances belong to each label."."""
    input_unit: str = "instances"
    """Self-prompting <INPUT_UNIT>."""
    task_spec: str = ""
    """Self-prompting <TASK_SPEC>."""
    solve_and_count: str = ""
    """Self-prompting <SOLVE_AND_COUNT>."""


@dataclass
class TaskConfig:
    name: str = MISSING
    labels: list[str] = MISSING
    """The two labels, in the order of the prompt's "Choose exactly one label from"; the example answer is the second."""
    source: SourceConfig = field(default_factory=SourceConfig)
    pool_size: int = 5000
    """Instances in the pool, half of each label (App. C.1)."""
    pool_seed: int = 0
    prompt: PromptSpec = field(default_factory=PromptSpec)


@dataclass
class MockConfig:
    """The scripted backend used by tests and dry plumbing checks."""

    answer: Optional[str] = None
    """Fixed answer text; None answers with a label picked from the prompt's hash."""
    latency_s: float = 0.0
    call_log: Optional[str] = None
    """Append one line per call to this file (tests count calls with it)."""


@dataclass
class ModelConfig:
    name: str = MISSING
    """Stable registry name, written into records."""
    backend: str = MISSING
    """hf | mock."""
    model_id: str = MISSING
    """Hub id or local folder; for a packaged GGUF, a label for the weights."""
    context_window: int = MISSING
    gguf_package: Optional[str] = None
    """A pip package that ships the weights as a GGUF file (converted once into the cache)."""
    gguf_file: Optional[str] = None
    dtype: str = "float32"
    device: str = "cpu"
    max_batch_size: int = 16
    max_batch_tokens: int = 65536
    """hf: padded (prompt + new) tokens one generation batch may hold."""
    deterministic: bool = True
    """Greedy decoding returns the same text again, so further attempts are not paid for."""
    mock: MockConfig = field(default_factory=MockConfig)


@dataclass
class PatternConfig:
    name: str = MISSING


@dataclass
class BudgetConfig:
    name: str = MISSING
    max_tokens: int = MISSING
    """Maximum output tokens, reasoning included (§3.2)."""


@dataclass
class PromptVariantConfig:
    name: str = MISSING
    """standard | hint | strategy | self_prompt (App. B)."""


@dataclass
class LoggerConfig:
    name: str = "none"


@dataclass
class PathsConfig:
    results_dir: str = "results"
    store_dir: str = "results/store"
    cache_dir: str = "~/.cache/mip"


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    task: dict[str, TaskConfig] = field(default_factory=dict)
    pattern: PatternConfig = field(default_factory=PatternConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    prompt_variant: PromptVariantConfig = field(default_factory=PromptVariantConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    setting: str = "core"
    n: int = 2000
    p: float = 0.55
    seed: int = 0
    """Selection seed s."""
    order_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Order seeds of the random pattern."""
    max_attempts: int = 3
    infra_retries: int = 3
    """Calls retried after an infrastructure error before the experiment is left unstored."""
    data_dir: Optional[str] = None
    """Read local files laid out as shared/data/raw instead of the hub."""
    dry_run: bool = False
    progress: bool = True


def register() -> None:
    ConfigStore.instance().store(name="config_schema", node=Config)


def to_plain(obj: Any) -> Any:
    """A dataclass config as plain containers (for records and saved configs)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.structured(obj), resolve=True)
