"""Backends: one interface (:class:`mip.models.base.Backend`), one module per provider.

Providers import their heavy libraries only when built, so ``mip`` imports without
torch, transformers or vLLM installed.

>>> backend = build_backend(model_cfg, cache_dir="~/.cache/mip")   # doctest: +SKIP
>>> for completion in backend.generate([Request("r1", "Say hi", max_tokens=8)]): ...
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from mip.config import ModelConfig
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request

__all__ = ["Backend", "BackendContext", "BackendSetupError", "Completion", "Request", "api_key", "build_backend", "BACKENDS"]

#: Backend registry: ``model.backend`` → ``module:Class``, imported only when a model uses it
#: (so ``mip`` imports without torch or vLLM). A new backend is one module, one entry here, a
#: ``conf/model/<name>.yaml`` and a test. Each class is built as ``Class(cfg, context)``.
BACKENDS: dict[str, str] = {
    "openai_compat": "mip.models.openai_compat:OpenAICompatBackend",
    "vllm": "mip.models.vllm_engine:VLLMBackend",
    "hf": "mip.models.hf_local:HFBackend",
    "mock": "mip.models.mock:MockBackend",
    "simulated": "mip.models.simulated:SimulatedBackend",
}


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
    if cfg.backend not in BACKENDS:
        raise ValueError(f"Model {cfg.name!r}: unknown backend {cfg.backend!r}; choose one of {', '.join(BACKENDS)}.")
    module, _, name = BACKENDS[cfg.backend].partition(":")
    backend_class = getattr(importlib.import_module(module), name)
    return backend_class(cfg, BackendContext(Path(cache_dir).expanduser(), api_key(cfg)))
