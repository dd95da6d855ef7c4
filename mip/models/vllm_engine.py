"""The in-process ``vllm.LLM`` engine on a GPU node: a job hands all its prompts over in
one call, and vLLM schedules them (continuous batching, prefix caching).

vLLM is imported here only, when the backend is built, so nothing else needs it; it is
GPU-only and pins its own torch and transformers (``pip install -e '.[vllm]'`` in a GPU
environment). The engine is replaced at its boundary in the tests.
"""

from __future__ import annotations

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


class VLLMBackend(Backend):
    schema = VLLMModelConfig
    cost_basis = "time"

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
        requests = list(requests)  # one engine call schedules them all
        if not requests:
            return
        vllm = _import_vllm()
        llm = self.llm
        params = [vllm.SamplingParams(temperature=0.0, max_tokens=r.max_tokens, seed=0) for r in requests]
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
