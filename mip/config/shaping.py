"""Whether a config field shapes an answer, declared on the field itself.

Every field of the model, budget, prompt-variant, strategy, setting and task schemas enters
an experiment's key (:mod:`mip.experiment.keys`) unless it is declared with :func:`setting`, which
says why it cannot change an answer. The key reads the declaration from the field:

>>> from dataclasses import dataclass
>>> @dataclass
... class Example:
...     model_id: str = "x"
...     timeout_s: float = setting(60.0, why="how long to wait for an answer")
>>> shapes_answer(fields(Example)[0]), shapes_answer(fields(Example)[1])
(True, False)
>>> not_answer_shaping(Example)
{'timeout_s': 'how long to wait for an answer'}
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import Field, field, fields
from typing import Any

_NONE: Any = object()


def setting(default: Any = _NONE, *, why: str, factory: Callable[[], Any] | None = None) -> Any:
    """A dataclass field that shapes no answer, with the reason (``why``): the key leaves it out."""
    metadata = {"shapes_answer": False, "why": why}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def shapes_answer(f: Field) -> bool:
    """Whether a field may change an answer (every field not declared with :func:`setting`)."""
    return f.metadata.get("shapes_answer", True)


def not_answer_shaping(schema: type, prefix: str = "") -> dict[str, str]:
    """The fields of ``schema`` (nested ones by dotted name) that shape no answer, each with its reason."""
    hints = typing.get_type_hints(schema)
    out: dict[str, str] = {}
    for f in fields(schema):
        if not shapes_answer(f):
            out[prefix + f.name] = f.metadata["why"]
        elif dataclasses.is_dataclass(hints.get(f.name)):
            out.update(not_answer_shaping(hints[f.name], f"{prefix}{f.name}."))
    return out
