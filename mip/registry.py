"""Registries of ``name → "module:attribute"`` (backends, strategies): the module is imported
only when a run uses the name, so ``mip`` imports without torch or vLLM.

>>> load({"dumps": "json:dumps"}, "dumps", "encoder")([1])
'[1]'
>>> load({"dumps": "json:dumps"}, "toml", "encoder")
Traceback (most recent call last):
ValueError: Unknown encoder 'toml'; choose one of dumps.
"""

from __future__ import annotations

import importlib
from typing import Any


def load(registry: dict[str, str], name: str, kind: str) -> Any:
    """What ``registry`` registers as ``name``, imported now; an unknown name is a one-line
    ValueError listing the known ones."""
    if name not in registry:
        raise ValueError(f"Unknown {kind} {name!r}; choose one of {', '.join(registry)}.")
    module, _, attribute = registry[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
