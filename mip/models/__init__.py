"""Backends: one interface (:class:`mip.models.base.Backend`), one module per provider.

Providers import their heavy libraries only when built, so ``mip`` imports without
torch, transformers or vLLM installed.

>>> backend = build_backend(model_cfg, cache_dir="~/.cache/mip")   # doctest: +SKIP
>>> for completion in backend.generate([Request("r1", "Say hi", max_tokens=8)]): ...
"""

from __future__ import annotations

from pathlib import Path

from mip.config import ModelConfig
from mip.models.base import Backend, Completion, Request

__all__ = ["Backend", "Completion", "Request", "build_backend", "BACKENDS"]

BACKENDS = ("hf", "mock")


def build_backend(cfg: ModelConfig, cache_dir: str | Path) -> Backend:
    """The backend named by ``cfg.backend``; it loads weights lazily, on first use."""
    if cfg.backend == "hf":
        from mip.models.hf_local import HFBackend

        return HFBackend(cfg, Path(cache_dir).expanduser())
    if cfg.backend == "mock":
        from mip.models.mock import MockBackend

        return MockBackend(cfg)
    raise ValueError(f"Model {cfg.name!r}: unknown backend {cfg.backend!r}; choose one of {', '.join(BACKENDS)}.")
