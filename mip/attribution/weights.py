"""attribute.py's weights: where they are, how they load and are placed, and the one-line
refusal when they are not on disk (before any replay starts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mip.attribution.memory import Plan
from mip.config import AttributeConfig, HFModelConfig


class AttributionError(RuntimeError):
    """attribute.py cannot start: the message says what is missing."""


def weights_folder(cfg: AttributeConfig) -> str:
    """Where the weights are; they must be on disk before any work starts."""
    if cfg.weights:
        return cfg.weights
    if isinstance(cfg.model, HFModelConfig) and cfg.model.gguf_package:
        from mip.models.hf_local import converted_dir

        return str(converted_dir(cfg.model, Path(cfg.paths.cache_dir).expanduser()))
    return cfg.model.model_id


def device_and_dtype(cfg: AttributeConfig) -> tuple[str, Any]:
    import torch

    device = cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, cfg.dtype) if cfg.dtype else (torch.bfloat16 if device.startswith("cuda") else torch.float32)
    return device, dtype


def _missing(cfg: AttributeConfig, source: str, e: Exception) -> AttributionError:
    return AttributionError(
        f"No weights for {cfg.model.name} on disk at {source!r} ({type(e).__name__}). Download them first "
        "(e.g. `huggingface-cli download <id>`) or pass weights=<folder>.")


def load_tokenizer(cfg: AttributeConfig) -> tuple[Any, Any]:
    """The tokenizer and the model's configuration: small files, read before the weights."""
    from transformers import AutoConfig, AutoTokenizer

    source = weights_folder(cfg)
    try:
        return (AutoTokenizer.from_pretrained(source, local_files_only=True),
                AutoConfig.from_pretrained(source, local_files_only=True))
    except (OSError, ValueError) as e:
        raise _missing(cfg, source, e) from e


def load_model(cfg: AttributeConfig, plan: Plan | None = None) -> tuple[Any, Any]:
    """The weights, placed as ``plan`` says (sharded over the GPUs with ``device_map`` for shard)."""
    from transformers import AutoModelForCausalLM

    source = weights_folder(cfg)
    device, dtype = device_and_dtype(cfg)
    tokenizer, _ = load_tokenizer(cfg)
    try:
        if plan is not None and plan.placement == "shard":
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, local_files_only=True,
                                                         device_map="auto", max_memory=plan.max_memory)
        else:
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, local_files_only=True).to(device)
    except (OSError, ValueError) as e:
        raise _missing(cfg, source, e) from e
    return model, tokenizer
