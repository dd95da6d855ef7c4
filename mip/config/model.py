"""The schemas of a model config: the fields every backend has, and one schema per backend.

Each ``conf/model/<name>.yaml`` extends its backend's schema, which
:func:`mip.entry.config_store.register` stores in Hydra's ConfigStore as ``model_schema/<backend>``
(the backend's name in :data:`mip.models.BACKENDS`, which also sets ``backend``):

    # conf/model/gemma4_31b.yaml
    defaults:
      - /model_schema/openai_compat@_here_
    name: gemma4_31b
    ...

So a field of another backend, or a typo, fails at composition
(``python run.py model=gemma4_31b model.gguf_file=x``: "Key 'gguf_file' not in
'OpenAICompatModelConfig'"). A backend reads its schema through its class's ``schema``
attribute (:class:`mip.models.base.Backend`); a new backend may bring its own, in its module.

>>> Traces("planted").value, SimulatedModelConfig().traces.value   # a simulated model is planted by its schema
('planted', 'planted')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from omegaconf import MISSING

from mip.config.shaping import setting


class Traces(str, Enum):
    """What a model's reasoning traces are (§5.1, footnote 10): the paper's trace analysis
    pools the models with full traces only, and mip's pooled trace figures do the same."""

    full = "full"
    """Full reasoning text (DeepSeek-V4-Flash, gpt-oss-120b, Qwen3.6-35B-A3B, Qwen3.6-Plus)."""
    summary = "summary"
    """A summary of the reasoning, not the reasoning (Grok 4.1 Fast, App. E.1.4)."""
    absent = "absent"
    """No trace, or none the paper analysed."""
    planted = "planted"
    """A simulated model's trace: the IDs its planted rule read. An instrument, never pooled
    with other models unless named in ``coverage.models``."""


@dataclass
class ModelConfig:
    """What every backend has; the schema of a backend that declares none."""

    name: str = MISSING
    """Stable registry name, written into records."""
    backend: str = MISSING
    """The backend's name in mip.models.BACKENDS; set by the schema a model config extends."""
    model_id: str = MISSING
    """Hub id or local folder; for a packaged GGUF, a label for the weights."""
    context_window: int = MISSING
    traces: Traces = setting(Traces.absent,
                             why="what analysis pools; the model's reasoning is requested by keyed fields")
    """What its reasoning traces are (:class:`Traces`); pooled trace figures and numbers
    (Figs. 5 and 22) pool the ``full`` ones unless analyze.py's ``coverage.models`` names others."""
    deterministic: bool = False
    """Whether the same request returns the same text (greedy local decoding): then an
    experiment gets one attempt, else up to ``max_attempts`` (§3.2). The one place that
    decides attempts (mip.experiment.keys.attempts_allowed); records carry the number."""
    tokenizer: Optional[str] = setting(None, why="counts tokens before a call; counts never reach the body")
    """Hub id or folder of a tokenizer for counting prompt tokens before any call."""
    chars_per_token: float = setting(3.5, why="estimates tokens before a call")
    """Documented estimate of prompt tokens when no tokenizer is at hand (errs on the long side)."""
    price_input_per_mtok: Optional[float] = setting(None, why="dry-run cost")
    """USD per million prompt tokens, for dry-run cost estimates; null when unknown."""
    price_output_per_mtok: Optional[float] = setting(None, why="dry-run cost")
    prompt_tokens_per_s: Optional[float] = setting(None, why="dry-run GPU time")
    """Local models: prompt tokens one GPU (the CPU when ``device`` is cpu) reads per second
    under batched load, for dry-run GPU time; null when unknown. Set your measured rate."""
    output_tokens_per_s: Optional[float] = setting(None, why="dry-run GPU time")
    """Local models: output tokens one GPU (the CPU when ``device`` is cpu) writes per second under batched load."""

    @property
    def reserved_answer_tokens(self) -> Optional[int]:
        """Output tokens kept for the answer out of the budget (App. C.2); None: no split."""
        return None

    @property
    def runs_on(self) -> str:
        """Where a local model's time is spent, for dry-run time estimates: GPU or CPU."""
        return "GPU"


@dataclass
class HFModelConfig(ModelConfig):
    """hf: transformers in-process (mip/models/hf_local.py)."""

    gguf_package: Optional[str] = setting(None, why="which package ships the weights file; the file name is keyed")
    """A pip package that ships the weights as a GGUF file (converted once into the cache)."""
    gguf_file: Optional[str] = None
    dtype: str = "float32"
    device: str = setting("cpu", why="where the weights run")
    max_batch_size: int = setting(16, why="hf: batching under greedy decoding")
    max_batch_tokens: int = setting(65536, why="hf: batching under greedy decoding")
    """Padded (prompt + new) tokens one generation batch may hold."""

    @property
    def runs_on(self) -> str:
        return "CPU" if self.device == "cpu" else "GPU"


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
    (a dotted path into the request body); ``max_tokens`` in the body is the whole budget or,
    where the provider does not count reasoning in it, ``answer_tokens``. Answers forced after an exhausted reasoning
    budget are parsed like any other.
    """

    answer_tokens: Optional[int] = None
    reasoning_field: str = "reasoning.max_tokens"
    max_tokens_counts_reasoning: bool = True
    """Whether the provider counts reasoning inside ``max_tokens`` (the preflight measures it).
    true: ``max_tokens`` is the whole budget, as the other models have it; false: the answer has
    ``max_tokens`` of its own, so ``max_tokens`` is sent as ``answer_tokens`` and reasoning plus
    answer stay within the budget (App. C.2). A preflight that finds the other rule fails."""


@dataclass
class OpenAICompatModelConfig(ModelConfig):
    """openai_compat: any chat-completions server (mip/models/openai_compat.py)."""

    base_url: Optional[str] = setting(
        None, why="where the server is, not what it serves; the model id and provider pinning are keyed")
    api_key_env: Optional[str] = setting(None, why="the name of a variable holding a secret")
    """Name of the environment variable holding the API key (the key itself never enters a config)."""
    max_concurrency: int = setting(16, why="how many calls run at once")
    request_timeout_s: float = setting(3600.0, why="how long to wait for an answer")
    """Deadline of one try of a request, over connect, headers and the whole body; a stalled or
    dripping server fails that try alone (retried), the others in flight go on."""
    max_response_bytes: int = setting(32 * 2**20, why="a larger reply fails as infrastructure, never a verdict")
    """A reply larger than this is an infrastructure failure (a 100K-token trace is ~0.5 MB)."""
    client_max_retries: int = setting(4, why="retries of a failed call (infrastructure, never a verdict)")
    """Retries of each request (408/409/429/5xx, dropped connections, deadlines, a 200 with an error
    or no JSON), honouring Retry-After. The only retries an openai_compat request gets: the job's
    ``infra_retries`` then apply only to a crash of the backend (mip/models/calls.py)."""
    max_tokens_param: str = "max_tokens"
    """max_tokens, or max_completion_tokens for servers that want it."""
    temperature: Optional[float] = 0.0
    """Sent as the body's ``temperature``; null leaves it out (the provider's default). The paper
    decodes at 0; a provider that accepts only its default (OpenAI's GPT-5 family) needs null.
    Part of the experiment's identity: another value is another experiment."""
    transport: str = setting("aiohttp", why="how bodies travel; the body itself is keyed")
    """aiohttp (mip's lean client, the default) or openai (the openai SDK); see mip/models/openai_compat.py."""
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    reasoning: dict[str, Any] = field(default_factory=dict)
    """Sent as the request's ``reasoning`` object (OpenRouter), e.g. {enabled: false}."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Sent for the server's chat template (``vllm serve``), e.g. {enable_thinking: true}."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    budget_split: BudgetSplitConfig = field(default_factory=BudgetSplitConfig)
    server_tokenize: bool = setting(False, why="counts tokens before a call")
    """Count prompt tokens with the server's ``/tokenize`` endpoint (``vllm serve`` has one)."""
    device: Optional[str] = setting(None, why="where the weights run")
    """A local server's device (``cpu``, ``cuda``), for dry-run time at ``prompt_tokens_per_s`` and
    ``output_tokens_per_s``; null for a hosted API or a GPU server."""

    @property
    def reserved_answer_tokens(self) -> Optional[int]:
        return self.budget_split.answer_tokens

    @property
    def runs_on(self) -> str:
        return "CPU" if self.device == "cpu" else "GPU"


@dataclass
class VLLMModelConfig(ModelConfig):
    """vllm: the vLLM engine in-process (mip/models/vllm_engine.py)."""

    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to vllm.LLM (tensor_parallel_size, max_model_len, gpu_memory_utilization, …)."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to the chat template, e.g. {enable_thinking: true}."""
    reasoning_parser: Optional[str] = None
    """vLLM reasoning parser of the model family (qwen3, deepseek_r1, …); null: no reasoning split.
    With a parser, special tokens are kept in the text, as vLLM's server keeps them."""
    chunk_size: Optional[int] = setting(
        None, why="vllm: how many prompts go to the engine at once (batching under greedy decoding)")
    """Prompts per engine call; each chunk's answers are stored before the next is sent, so a
    requeue loses at most one chunk. null: the prompts the engine generates whole in about five
    minutes at ``output_tokens_per_s`` (mip.models.vllm_engine.chunk_size), or, with no rate,
    4 × ``engine_kwargs.max_num_seqs`` (vLLM's default 256). A dry run states it."""


@dataclass
class MockConfig:
    """The scripted answers of the mock backend."""

    answer: Optional[str] = None
    """Fixed answer text; None answers with a label picked from the prompt's hash."""
    latency_s: float = setting(0.0, why="a test model's delay")
    call_log: Optional[str] = setting(None, why="a test model's call log")
    """Append one line per call to this file (tests count calls with it)."""


@dataclass
class MockModelConfig(ModelConfig):
    """mock: the scripted backend of tests and dry plumbing checks (mip/models/mock.py)."""

    mock: MockConfig = field(default_factory=MockConfig)


@dataclass
class SimulatedModelConfig(ModelConfig):
    """simulated: a planted positional bias, a test instrument and not an LLM (mip/models/simulated.py)."""

    traces: Traces = setting(Traces.planted,
                             why="what analysis pools; the model's reasoning is requested by keyed fields")
    """An instrument's trace (the IDs its rule read): never pooled with LLMs by default."""

    read_first: Optional[int] = None
    """How many leading instances it reads and answers the majority of; null with read_last: all
    (the unbiased control)."""
    read_last: Optional[int] = None
    """How many trailing instances it reads instead; null: not this rule. Keyed only when set
    (:data:`mip.experiment.keys.KEYED_WHEN_SET`), so records stored before it existed keep their keys."""
