"""The fields of a config schema as a command line names them (``audit.data``), and the
ones a typo most likely meant; shared by :mod:`mip.entry.cli` and :mod:`mip.entry.overrides`."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any


def _field_type(hint: Any) -> Any:
    """``X`` for ``Optional[X]``; any other type as it is."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint


def schema_has(schema: type, key: str) -> bool:
    """Whether the dotted ``key`` names a field of the dataclass ``schema`` (below a ``dict``
    field any name is a key; below a free-form value Hydra checks the rest). ``schema``'s own
    fields are its own; a field's, any extension's (:func:`_field_hints`)."""
    hint: Any = schema
    for depth, part in enumerate(key.split(".")):
        hint = _field_type(hint)
        if dataclasses.is_dataclass(hint):
            hints = _field_hints(hint, extended=depth > 0)
            if part not in hints:
                return False
            hint = hints[part]
        elif typing.get_origin(hint) is dict:
            hint = typing.get_args(hint)[1]
        else:
            return True
    return True


def _subclasses(schema: type) -> list[type]:
    found = []
    for sub in schema.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _field_hints(schema: type, extended: bool = True) -> dict[str, Any]:
    """The fields a command line may set under a node of type ``schema``. A model config is
    typed by its backend's schema, a strategy's settings by its strategy's (each a subclass):
    before composition the option is not known, so any one's field is accepted here, and
    mip.entry.overrides checks it against the option chosen (``extended=False``: the schema's own)."""
    from mip.config import ModelConfig, StrategyConfig

    hints: dict[str, Any] = {}
    extended = extended and schema in (ModelConfig, StrategyConfig)
    if schema is StrategyConfig:
        from mip.strategies import schemas

        schemas()  # each strategy's module, so that its schema is a known subclass
    for kind in [schema, *_subclasses(schema)] if extended else [schema]:
        hints = {**typing.get_type_hints(kind), **hints}
    return hints


def schema_keys(schema: type, prefix: str = "") -> list[str]:
    """Every dotted field name of a dataclass schema (not below ``dict`` fields)."""
    keys = []
    for name, hint in _field_hints(schema, extended=bool(prefix)).items():
        keys.append(prefix + name)
        if dataclasses.is_dataclass(inner := _field_type(hint)):
            keys += schema_keys(inner, f"{prefix}{name}.")
    return keys


def close_keys(key: str, schema: type) -> list[str]:
    """The schema's keys a typo most likely meant: by the whole key, else by its last part
    (``dta`` → ``audit.data``)."""
    keys = schema_keys(schema)
    found = [k for k in keys if k.lower() == key.lower()][:1] or difflib.get_close_matches(key, keys, n=1)
    if not found:
        leaves = difflib.get_close_matches(key.rsplit(".", 1)[-1], {k.rsplit(".", 1)[-1] for k in keys}, n=2)
        found = [k for k in keys if k.rsplit(".", 1)[-1] in leaves][:2]
    return found
