"""Backends: one interface (:class:`mip.models.base.Backend`), one module per provider.

Providers import their heavy libraries only when built, so ``mip`` imports without
torch, transformers or vLLM installed.

>>> backend = build_backend(model_cfg, cache_dir="~/.cache/mip")   # doctest: +SKIP
>>> for completion in backend.generate([Request("r1", "Say hi", max_tokens=8)]): ...
"""

from __future__ import annotations

import os
from pathlib import Path

from mip.config import ModelConfig
from mip.models.base import Backend, BackendSetupError, Completion, Request

__all__ = ["Backend", "BackendSetupError", "Completion", "Request", "api_key", "build_backend", "BACKENDS"]

BACKENDS = ("hf", "openai_compat", "vllm", "mock", "simulated")


def api_key(cfg: ModelConfig) -> str | None:
    """The API key from the environment variable the model config names.

    Read here, where the backend is built, and nowhere else; the key is handed to the
    client and never written to a config, record, log or W&B.
    """
    if not cfg.api_key_env:
        return None
    key = os.environ.get(cfg.api_key_env, "").strip()
    if not key:
        raise BackendSetupError(
            f"Model {cfg.name!r} needs an API key: set the environment variable {cfg.api_key_env} "
            f"(e.g. `export {cfg.api_key_env}=...`)."
        )
    return key


def build_backend(cfg: ModelConfig, cache_dir: str | Path) -> Backend:
    """The backend named by ``cfg.backend``; it loads weights lazily, on first use."""
    if cfg.backend == "openai_compat":
        from mip.models.openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(cfg, api_key(cfg))
    if cfg.backend == "vllm":
        from mip.models.vllm_engine import VLLMBackend

        return VLLMBackend(cfg)
    if cfg.backend == "hf":
        from mip.models.hf_local import HFBackend

        return HFBackend(cfg, Path(cache_dir).expanduser())
    if cfg.backend == "mock":
        from mip.models.mock import MockBackend

        return MockBackend(cfg)
    if cfg.backend == "simulated":
        from mip.models.simulated import SimulatedBackend
        return SimulatedBackend(cfg)
    raise ValueError(f"Model {cfg.name!r}: unknown backend {cfg.backend!r}; choose one of {', '.join(BACKENDS)}.")
