"""The in-process ``vllm.LLM`` engine on a GPU node: a job hands its prompts over in chunks
of ``model.chunk_size``, and vLLM schedules each chunk (continuous batching, prefix caching).

Each chunk's completions are handed back before the next chunk is sent, so the job stores
them first: a requeue, a time limit or a crash mid-job loses at most the chunk in flight, and
the rerun calls only for what is not stored (:func:`chunk_size` says how big a chunk is).

vLLM is imported here only, when the backend is built, so nothing else needs it; it is
GPU-only and pins its own torch and transformers (``pip install -e '.[vllm]'`` in a GPU
environment). The engine is replaced at its boundary in the tests.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from mip.config import VLLMModelConfig
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request


NO_VLLM = ("The vllm backend runs on a GPU node with vLLM installed: `pip install -e '.[vllm]'` "
           "in a CUDA environment (it brings its own torch and transformers).")


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        raise BackendSetupError(NO_VLLM) from e
    return vllm


class _ParserRequest:
    """The little of a chat request that vLLM's reasoning parsers look at."""

    def __init__(self, model: str, chat_template_kwargs: dict[str, Any]):
        self.model = model
        self.messages: list = []
        self.chat_template_kwargs = chat_template_kwargs


def reasoning_splitter(vllm: Any, name: str | None, tokenizer: Any, cfg: VLLMModelConfig):
    """``text -> (reasoning, content)`` with vLLM's own parser for the model family."""
    if not name:
        return lambda text: (None, text)
    from vllm.reasoning import ReasoningParserManager

    parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)
    request = _ParserRequest(cfg.model_id, dict(cfg.chat_template_kwargs))
    extract = getattr(parser, "extract_reasoning", None) or parser.extract_reasoning_content
    return lambda text: extract(text, request)


#: vLLM's own default of ``max_num_seqs`` (sequences one engine step holds) where
#: ``engine_kwargs`` does not set it.
VLLM_MAX_NUM_SEQS = 256
#: Where the config gives no output rate, a chunk is this many full engine batches.
CHUNK_BATCHES = 4
#: Where it does: a chunk is what the engine generates in about this many seconds, every prompt
#: using its whole output budget, so a requeue loses at most a few minutes of generation.
CHUNK_S = 300.0


def chunk_size(cfg: VLLMModelConfig, max_tokens: int | None = None) -> int:
    """Prompts per ``llm.chat`` call: ``model.chunk_size`` where set; else, where the config
    gives ``output_tokens_per_s``, the prompts whose whole ``max_tokens`` the engine generates
    in about ``CHUNK_S`` seconds (at least one; at the paper's settings, Qwen3.6-35B-A3B at
    6,900 output tokens/s and a 20K budget, 103 prompts: more than a job's ≤ 30 experiments
    only where the job itself is shorter than that); else ``CHUNK_BATCHES`` times the engine's
    ``max_num_seqs``.

    A chunk keeps the GPU full until its last sequences drain, so a chunk of one batch would
    idle the GPU behind every long reasoning trace, while a chunk of the whole job loses every
    answer to a requeue; the rate bounds the loss in time, not in prompts. A chunk is never
    less than one prompt, whose own generation time (its budget over one sequence's decoding
    speed) is the floor of any loss.

    >>> chunk_size(VLLMModelConfig(engine_kwargs={"max_num_seqs": 64}))
    256
    >>> chunk_size(VLLMModelConfig(output_tokens_per_s=6900), max_tokens=20000)
    103
    >>> chunk_size(VLLMModelConfig(output_tokens_per_s=6900), max_tokens=100000)
    20
    """
    if cfg.chunk_size is not None:
        return cfg.chunk_size
    if cfg.output_tokens_per_s and max_tokens:
        return max(1, int(cfg.output_tokens_per_s * CHUNK_S / max_tokens))
    return CHUNK_BATCHES * int(cfg.engine_kwargs.get("max_num_seqs") or VLLM_MAX_NUM_SEQS)


def chunk_note(cfg: VLLMModelConfig, max_tokens: int) -> str:
    """What a dry run says of the chunk: its size and what a requeue may lose."""
    size = chunk_size(cfg, max_tokens)
    head = f"{cfg.name}: vllm gets the prompts {size:,} at a time (a chunk), each chunk stored before the next"
    if cfg.chunk_size is not None:
        return f"{head} (model.chunk_size)."
    if cfg.output_tokens_per_s:
        lost = size * max_tokens / cfg.output_tokens_per_s
        return (f"{head}: a requeue loses at most about {lost / 60:.0f} min of generation at "
                f"{cfg.output_tokens_per_s:,.0f} output tokens/s (model.output_tokens_per_s) and {max_tokens:,} "
                "tokens a prompt; set model.chunk_size to change it.")
    return (f"{head}: {CHUNK_BATCHES} engine batches, as the config gives no model.output_tokens_per_s to bound "
            "what a requeue loses in time; set model.chunk_size to change it.")


def keeps_special_tokens(cfg: VLLMModelConfig) -> bool:
    """Whether the text is decoded with the special tokens in it: yes with a reasoning parser.

    As vLLM's server does: its parsers turn ``skip_special_tokens`` off for every request
    (``ParserEngine.adjust_request`` in vllm/parser/engine/parser_engine.py, which the qwen3
    parser of vllm/parser/qwen3.py extends: vLLM's main branch as stored, commit 001ba1eb, read
    2026-12-02; the 0.33.0 wheel itself could not be opened here),
    because a ``</think>`` that is a special token in the model's vocabulary would otherwise
    vanish from the text before the parser splits reasoning from the answer.
    """
    return bool(cfg.reasoning_parser)


class VLLMBackend(Backend):
    schema = VLLMModelConfig
    cost_basis = "time"
    own_tokenizer = True

    @classmethod
    def refuses(cls, cfg) -> str | None:
        size = getattr(cfg.model, "chunk_size", None)
        if size is not None and size < 1:
            return f"{cfg.model.name}: model.chunk_size={size} must be at least 1 (or null: sized by the output rate)."
        return None

    @classmethod
    def dry_run_note(cls, cfg: VLLMModelConfig, max_tokens: int) -> str | None:
        return chunk_note(cfg, max_tokens)

    @classmethod
    def unavailable(cls) -> str | None:
        import importlib.util

        return None if importlib.util.find_spec("vllm") else NO_VLLM

    def __init__(self, cfg: VLLMModelConfig, context: BackendContext | None = None):
        self.cfg = cfg
        self._llm: Any = None
        self._split: Any = None

    @property
    def llm(self) -> Any:
        if self._llm is None:
            vllm = _import_vllm()
            self._llm = vllm.LLM(model=self.cfg.model_id, seed=0, **self.cfg.engine_kwargs)
            self._split = reasoning_splitter(vllm, self.cfg.reasoning_parser, self._llm.get_tokenizer(), self.cfg)
        return self._llm

    def close(self) -> None:
        self._llm = None

    def count_tokens(self, prompts: Sequence[str]) -> list[int] | None:
        tokenizer = self.llm.get_tokenizer()
        texts = [
            tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True,
                                          **self.cfg.chat_template_kwargs)
            for p in prompts
        ]
        return [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        """Completions chunk by chunk: each chunk's are yielded (and so stored by the job)
        before the next chunk is pulled and sent."""
        source = iter(requests)
        while (first := next(source, None)) is not None:  # sized by the output limit of the chunk's first prompt
            size = chunk_size(self.cfg, first.max_tokens)
            yield from self._chunk([first, *itertools.islice(source, size - 1)])

    def _chunk(self, requests: list[Request]) -> Iterator[Completion]:
        vllm = _import_vllm()
        llm = self.llm
        keep = keeps_special_tokens(self.cfg)
        params = [vllm.SamplingParams(temperature=0.0, max_tokens=r.max_tokens, seed=0, skip_special_tokens=not keep)
                  for r in requests]
        start = time.perf_counter()
        outputs = llm.chat(
            [[{"role": "user", "content": r.prompt}] for r in requests],
            sampling_params=params,
            chat_template_kwargs=dict(self.cfg.chat_template_kwargs) or None,
            use_tqdm=False,
        )
        latency = time.perf_counter() - start
        for request, output in zip(requests, outputs):
            generated = output.outputs[0]
            reasoning, content = self._split(generated.text)
            yield Completion(
                request.id,
                output=content,
                reasoning=reasoning,
                finish_reason=generated.finish_reason,
                prompt_tokens=len(output.prompt_token_ids or []),
                completion_tokens=len(generated.token_ids),
                latency_s=latency,
                usage={"engine": "vllm", "batch_size": len(requests)},
                served_model=self.cfg.model_id,
            )
