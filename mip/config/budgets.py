"""A budget is its value: the output-token limit a job ran under, named by the budget whose
file sets that limit (``conf/budget/*.yaml``), else by the number itself.

``budget=smoke budget.max_tokens=999`` keeps the name ``smoke`` in the config; its records are
not smoke's (320 tokens) and must not be pooled with them, and a refusal must name what was
given. Every place that names a budget as a slice or in a message asks :func:`label`.

>>> label("20k", 20000), label("smoke", 999), label("20k", 320), label("20k", 20000, answer_tokens=2000)
('20k', '999 tokens', 'smoke', '20k (answer 2000)')
>>> tokens_of("100k"), tokens_of("999 tokens"), tokens_of("smoke")
(100000, 999, 320)
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

#: The repository's budget files (beside the package in a checkout or an editable install).
BUDGET_DIR = Path(__file__).resolve().parents[2] / "conf" / "budget"


@functools.cache
def named() -> dict[str, int]:
    """``{name: max_tokens}`` of the budget files; names like ``20k`` stand for their number."""
    import yaml

    found: dict[str, int] = {}
    for path in sorted(BUDGET_DIR.glob("*.yaml")) if BUDGET_DIR.is_dir() else []:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if isinstance(data.get("max_tokens"), int):
            found[str(data.get("name", path.stem))] = data["max_tokens"]
    return found


def tokens_of(name: str) -> int | None:
    """The output-token limit a budget label stands for: a named budget's, ``20k``'s 20,000,
    ``999 tokens``' 999; None for a name nothing defines."""
    name = str(name).split(" (answer")[0]
    if name in named():
        return named()[name]
    match = re.fullmatch(r"(\d+)\s*(k|tokens)?", name.strip())
    if not match:
        return None
    return int(match[1]) * (1000 if match[2] == "k" else 1)


def label(name: str, max_tokens: int | None, answer_tokens: int | None = None) -> str:
    """The budget a job ran under, as a slice: ``name`` when its limit is ``max_tokens``, else the
    budget that sets that limit, else the number (``999 tokens``); an answer split is part of it."""
    if max_tokens is None:
        return str(name)
    if tokens_of(name) != max_tokens:
        name = next((k for k, v in named().items() if v == max_tokens), f"{max_tokens} tokens")
    return str(name) + (f" (answer {answer_tokens})" if answer_tokens else "")


def given(name: str, max_tokens: int) -> str:
    """How a refusal names the budget the user gave: ``20k``, or ``budget.max_tokens=300000``
    where the number overrides the named budget's own."""
    return str(name) if tokens_of(name) == max_tokens else f"budget.max_tokens={max_tokens}"
