"""Backends: one interface (:class:`mip.models.base.Backend`), one module per provider.

Providers import their heavy libraries only when built, so ``mip`` imports without
torch, transformers or vLLM installed.

>>> backend = build_backend(model_cfg, cache_dir="~/.cache/mip")   # doctest: +SKIP
>>> for completion in backend.generate([Request("r1", "Say hi", max_tokens=8)]): ...   # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path

from mip.config import ModelConfig
from mip.config.masking import remember
from mip.config.redact import variable_name
from mip.registry import load
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request

__all__ = ["Backend", "BackendContext", "BackendSetupError", "Completion", "Request", "api_key", "backend_class",
           "build_backend", "check_schema", "schemas", "BACKENDS"]

#: Backend registry: ``model.backend`` → ``module:Class``. A module imports its heavy libraries
#: only when a model uses it (so ``mip`` imports without torch or vLLM). A new backend is one
#: module (its class, and the schema of its model configs as the class's ``schema``), one entry
#: here, a ``conf/model/<name>.yaml`` extending ``/model_schema/<backend>`` and a test. Each class
#: is built as ``Class(cfg, context)``.
BACKENDS: dict[str, str] = {
    "openai_compat": "mip.models.openai_compat:OpenAICompatBackend",
    "vllm": "mip.models.vllm_engine:VLLMBackend",
    "hf": "mip.models.hf_local:HFBackend",
    "mock": "mip.models.mock:MockBackend",
    "simulated": "mip.models.simulated:SimulatedBackend",
}


def backend_class(backend: str) -> type[Backend]:
    """The class registered as ``backend``."""
    return load(BACKENDS, backend, "backend")


def schemas() -> dict[str, type[ModelConfig]]:
    """Each backend's model-config schema, by backend name (stored as ``model_schema/<name>``)."""
    return {name: backend_class(name).schema for name in BACKENDS}


def check_schema(cfg: ModelConfig) -> None:
    """Refuse a model config whose schema is not its backend's (``model.backend`` overridden
    on the command line): its backend would read fields the config does not have."""
    schema = backend_class(cfg.backend).schema
    if not isinstance(cfg, schema):
        raise ValueError(f"Model {cfg.name!r}: backend {cfg.backend!r} reads a {schema.__name__}, this config is a "
                         f"{type(cfg).__name__}; use a model config whose defaults list "
                         f"/model_schema/{cfg.backend}@_here_.")
    owned = {"model", "messages", "temperature", getattr(cfg, "max_tokens_param", "max_tokens")}
    if clash := sorted(owned & set(getattr(cfg, "extra_body", None) or {})):
        raise ValueError(f"Model {cfg.name!r}: model.extra_body sets {', '.join(clash)}, which mip sets itself (the "
                         "model id, the prompt, model.temperature, the budget); set those through their own keys "
                         "and drop them from extra_body.")


def api_key(cfg: ModelConfig) -> str | None:
    """The API key from the environment variable the model config names.

    Read here, where the backend is built, and nowhere else; the key is handed to the
    client and never written to a config, record, log or W&B.
    """
    env = getattr(cfg, "api_key_env", None)  # a field of the schemas of backends that call an API
    if not env:
        return None
    if not variable_name(env):  # a key pasted in place of its variable's name (dash or none): never echoed
        raise BackendSetupError(
            f"Model {cfg.name!r}: model.api_key_env must name an environment variable, and "
            "what it holds is no variable's name (a key itself?). Put the key in a variable "
            "(`export MY_KEY=...`) and pass model.api_key_env=MY_KEY; if that was a real key, revoke it, as it is in "
            "your shell history."
        )
    key = os.environ.get(env, "").strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in key):  # a header holding it would break (or forge) lines
        raise BackendSetupError(
            f"Model {cfg.name!r}: the value of the environment variable {env} holds a control character (a line "
            f"break pasted with the key?); set it to the key alone (`export {env}=...`).")
    if not key:
        raise BackendSetupError(
            f"Model {cfg.name!r} needs an API key: set the environment variable {env} (e.g. `export {env}=...`)."
        )
    remember({key})  # masked wherever it appears: a server that echoes it, an error that quotes it
    return key


def build_backend(cfg: ModelConfig, cache_dir: str | Path) -> Backend:
    """The backend named by ``cfg.backend``; it loads weights lazily, on first use."""
    check_schema(cfg)
    return backend_class(cfg.backend)(cfg, BackendContext(Path(cache_dir).expanduser(), api_key(cfg)))
