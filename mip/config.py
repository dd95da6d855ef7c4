"""Structured config: the dataclass schemas that the YAML files under ``conf/`` extend.

They are registered in Hydra's ConfigStore as ``config_schema`` (the primary config's
base), so a wrong key or type in any YAML file or override fails at composition time,
on the login node, before anything runs. Entry points turn the composed config into a
:class:`Config` once (``OmegaConf.to_object``); ``mip`` works on these objects only.

    python run.py --cfg job             # print the composed config
"""

from __future__ import annotations

import re
import secrets
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
class FilterSpec:
    """The single-instance question of a task, for filtering (App. C.1)."""

    instruction: str = ""
    answer: str = "label"
    """label (one of the two labels), number (checked numerically) or count (checked exactly)."""


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
    filter: FilterSpec = field(default_factory=FilterSpec)


@dataclass
class MockConfig:
    """The scripted backend used by tests and dry plumbing checks."""

    answer: Optional[str] = None
    """Fixed answer text; None answers with a label picked from the prompt's hash."""
    latency_s: float = 0.0
    call_log: Optional[str] = None
    """Append one line per call to this file (tests count calls with it)."""


@dataclass
class ProviderConfig:
    """OpenRouter provider routing: pin the provider so a run is not silently served by
    another host or quantisation (sent as the request's ``provider`` object)."""

    order: list[str] = field(default_factory=list)
    allow_fallbacks: bool = False
    require_parameters: bool = True
    quantizations: list[str] = field(default_factory=list)


@dataclass
class BudgetSplitConfig:
    """A model with separate reasoning and answer budgets (Qwen3.6-Plus, App. C.2).

    The request's output limit stays the whole budget; ``answer_tokens`` of it are kept
    for the answer and the rest is sent as the reasoning budget at ``reasoning_field``
    (a dotted path into the request body). Answers forced after an exhausted reasoning
    budget are parsed like any other.
    """

    answer_tokens: Optional[int] = None
    reasoning_field: str = "reasoning.max_tokens"


@dataclass
class ModelConfig:
    name: str = MISSING
    """Stable registry name, written into records."""
    backend: str = MISSING
    """hf | openai_compat | vllm | mock."""
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
    deterministic: bool = False
    """Whether the same request returns the same text (greedy local decoding): then an
    experiment gets one attempt, else up to ``max_attempts`` (§3.2). The one place that
    decides attempts (mip.keys.attempts_allowed); records carry the number."""
    mock: MockConfig = field(default_factory=MockConfig)
    # --- openai_compat
    base_url: Optional[str] = None
    api_key_env: Optional[str] = None
    """Name of the environment variable holding the API key (the key itself never enters a config)."""
    max_concurrency: int = 16
    request_timeout_s: float = 3600.0
    """Deadline of one try of a request, over connect, headers and the whole body; a stalled or
    dripping server fails that try alone (retried), the others in flight go on."""
    max_response_bytes: int = 32 * 2**20
    """A reply larger than this is an infrastructure failure (a 100K-token trace is ~0.5 MB)."""
    client_max_retries: int = 4
    """Retries of each request (408/409/429/5xx, dropped connections, deadlines, a 200 with an error
    or no JSON), honouring Retry-After. The only retries an openai_compat request gets: the job's
    ``infra_retries`` then apply only to a crash of the backend (mip/models/calls.py)."""
    max_tokens_param: str = "max_tokens"
    """max_tokens, or max_completion_tokens for servers that want it."""
    transport: str = "aiohttp"
    """aiohttp (mip's lean client, the default) or openai (the openai SDK); see mip/models/openai_compat.py."""
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    reasoning: dict[str, Any] = field(default_factory=dict)
    """Sent as the request's ``reasoning`` object (OpenRouter), e.g. {enabled: false}."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to the chat template (vLLM engine and vllm serve), e.g. {enable_thinking: true}."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    budget_split: BudgetSplitConfig = field(default_factory=BudgetSplitConfig)
    tokenizer: Optional[str] = None
    """Hub id or folder of a tokenizer for counting prompt tokens before any call."""
    server_tokenize: bool = False
    """Count prompt tokens with the server's ``/tokenize`` endpoint (``vllm serve`` has one)."""
    chars_per_token: float = 3.5
    """Documented estimate of prompt tokens when no tokenizer is at hand (errs on the long side)."""
    price_input_per_mtok: Optional[float] = None
    """USD per million prompt tokens, for dry-run cost estimates; null when unknown."""
    price_output_per_mtok: Optional[float] = None
    prompt_tokens_per_s: Optional[float] = None
    """Local models: prompt tokens one GPU (the CPU when ``device`` is cpu) reads per second
    under batched load, for dry-run GPU time; null when unknown. Set your measured rate."""
    output_tokens_per_s: Optional[float] = None
    """Local models: output tokens one GPU (the CPU when ``device`` is cpu) writes per second under batched load."""
    # --- vllm
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to vllm.LLM (tensor_parallel_size, max_model_len, gpu_memory_utilization, …)."""
    reasoning_parser: Optional[str] = None
    """vLLM reasoning parser of the model family (qwen3, deepseek_r1, …); null: no reasoning split."""


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
class StrategyConfig:
    """How the model aggregates (beyond the paper): single_call is the paper's setting."""

    name: str = "single_call"
    """single_call | count_report | decomposed."""
    batch_size: int = 50
    """decomposed: instances labelled per call (1: one call per instance)."""
    max_reasks: int = 2
    """decomposed: rounds that ask again for instances missing from the answers."""


@dataclass
class LoggerConfig:
    name: str = "none"
    """none | wandb."""
    project: str = "mip"
    entity: Optional[str] = None
    group: Optional[str] = None
    """W&B group; null: the sweep (or run) folder's name, set by run.py."""
    mode: Optional[str] = None
    """online | offline | disabled; null: WANDB_MODE where set, else online when WANDB_API_KEY is set,
    else offline (mip.tracking.wandb_mode)."""
    tags: list[str] = field(default_factory=list)


@dataclass
class PathsConfig:
    results_dir: str = "results"
    store_dir: str = "results/store"
    cache_dir: str = "~/.cache/mip"
    filter_dir: str = "results/filter"
    """Filter results (one file per model and instance) and Table 4."""


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    task: dict[str, TaskConfig] = field(default_factory=dict)
    pattern: PatternConfig = field(default_factory=PatternConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    prompt_variant: PromptVariantConfig = field(default_factory=PromptVariantConfig)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    setting: str = "core"
    n: int = 2000
    p: float = 0.55
    seed: int = 0
    """Selection seed s."""
    order_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Order seeds of the random pattern."""
    shuffle_seeds: list[int] = field(default_factory=list)
    """Expanded orderings (§5.2.1): for structured patterns, shuffle X_maj and X_min independently
    under each of these seeds, then arrange; empty runs the pattern once on the selection order."""
    max_attempts: int = 3
    infra_retries: int = 3
    """Rounds of retries, with backoff, for calls that failed for infrastructure reasons and that
    the backend did not retry itself (a crash of the backend; backends without per-request
    retries), before the experiment is left unstored for a rerun."""
    data_dir: Optional[str] = None
    """Read local files laid out as shared/data/raw instead of the hub."""
    use_filtered: bool = True
    """Use a task's filtered pool (App. C.1) when filter.py has built one; false: the unfiltered pool."""
    dry_run: bool = False
    progress: bool = True


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
    """A restriction of analysis, attribution or audit to some slices (mip.slices), from
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
class AnalyzeConfig:
    """analyze.py: where records come from and where the report goes."""

    source: str = "local"
    """local (records under ``results``) or wandb (offline run folders under ``results``, or the API with ``wandb.project``)."""
    results: list[str] = field(default_factory=lambda: ["results/store"])
    out_dir: str = "results/report"
    filter_dir: Optional[str] = "results/filter"
    """Where filter.py wrote Table 4; it joins the report when present."""
    wandb: WandbSourceConfig = field(default_factory=WandbSourceConfig)
    where: WhereConfig = field(default_factory=WhereConfig)
    """Restrict the report to some slices, e.g. where.budget=100k where.model=[a,b]."""
    core: Optional[list[float]] = field(default_factory=lambda: [2000, 0.55])
    """The core setting [n, p] (§3.5); null: every (n, p) that a model ran with several selection seeds."""


@dataclass
class AttributeConfig:
    """attribute.py: which stored outputs to replay, with which weights, and where to write."""

    model: ModelConfig = field(default_factory=ModelConfig)
    task: dict[str, TaskConfig] = field(default_factory=dict)
    results: list[str] = field(default_factory=lambda: ["results/store"])
    records_model: Optional[str] = None
    """Replay the records of this model name (default: model.name) — e.g. API outputs with local weights."""
    weights: Optional[str] = None
    """Folder or hub id of the weights (default: the model's converted folder or model_id); must be on disk."""
    out_dir: str = "results/attribution"
    data_dir: Optional[str] = None
    cache_dir: str = "~/.cache/mip"
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
    bin_size: int = 10
    relative_bins: int = 20


def register() -> None:
    from omegaconf import OmegaConf

    # `${range:1,51}` → [1, …, 50], for seed lists in presets.
    OmegaConf.register_new_resolver("range", lambda a, b: list(range(int(a), int(b))), replace=True)
    # `${uid:}` → a short random token, the same wherever it appears in one config (cached like
    # Hydra's `${now:}`), so two runs started in the same second get folders of their own.
    OmegaConf.register_new_resolver("uid", lambda: secrets.token_hex(3), use_cache=True, replace=True)
    ConfigStore.instance().store(name="config_schema", node=Config)
    ConfigStore.instance().store(name="analyze_schema", node=AnalyzeConfig)
    ConfigStore.instance().store(name="attribute_schema", node=AttributeConfig)
    ConfigStore.instance().store(name="filter_schema", node=FilterConfig)


def to_plain(obj: Any) -> Any:
    """A config (dataclass or OmegaConf node) as plain containers, secret-looking values
    redacted (for records and W&B)."""
    import dataclasses

    from omegaconf import OmegaConf

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return redact(_lists(dataclasses.asdict(obj)))  # resolved already: no OmegaConf round trip
    return redact(OmegaConf.to_container(OmegaConf.structured(obj), resolve=True))


def _lists(value: Any) -> Any:
    """Tuples as lists, the way OmegaConf and JSON give them."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


# A key is secret-looking when one of its "_"/"-"-separated words is one of these (api_key,
# x-api-key, client_secret, password, authorization), or when its last word is "token"
# (hf_token, access_token, token). Counts and limits (max_tokens, max_tokens_param,
# completion_tokens) are not secrets, and api_key_env holds a variable's name, not a key.
_SECRET_WORDS = frozenset({"apikey", "secret", "password", "passwd", "authorization", "bearer", "credentials"})
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key")})


def secret_key(name: str) -> bool:
    """Whether a config key's value should be masked.

    >>> [secret_key(k) for k in ("api_key", "hf_token", "max_tokens_param", "api_key_env")]
    [True, True, False, False]
    """
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()) if w]
    if not words or words[-1] == "env":
        return False
    pairs = set(zip(words, words[1:]))
    return bool(_SECRET_WORDS & set(words) or _SECRET_PAIRS & pairs or words[-1] == "token")


def redact(value: Any) -> Any:
    """Replace the values of secret-looking keys (see :func:`secret_key`).

    Keys belong in environment variables; this guards against one pasted into a config.
    """
    if isinstance(value, dict):
        return {k: "***" if secret_key(k) and isinstance(v, str) and v else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value
