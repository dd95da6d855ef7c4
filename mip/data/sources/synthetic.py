"""The synthetic arithmetic task (``arith``): expressions generated from ``pool_seed``,
labelled by the parity of their value. Needs no download; the demo and the tests use it.

>>> import random
>>> arithmetic_instance(random.Random(0))
('99 - 55 × 7', -286)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources.rows import LoadResult

if TYPE_CHECKING:
    from mip.config import TaskConfig

_OPS = ("+", "-", "*")


def arithmetic_instance(rng: random.Random) -> tuple[str, int]:
    """One expression of two or three operands, and its value (standard precedence)."""
    operands = [rng.randint(2, 99) for _ in range(rng.choice((2, 3)))]
    ops = [rng.choice(_OPS) for _ in operands[1:]]
    expr = " ".join(str(x) for pair in zip(operands, ops + [""]) for x in pair).strip()
    value = eval(expr, {"__builtins__": {}})  # noqa: S307 - digits and + - * only, built just above
    return expr.replace("*", "×"), value


def load_synthetic_arith(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    """Arithmetic expressions generated from ``pool_seed``; the label is the parity of the value."""
    rng = random.Random(cfg.pool_seed)
    out = LoadResult(source=f"synthetic:arith(seed={cfg.pool_seed})")
    even, odd = cfg.labels
    for i in range(cfg.source.size or 4 * cfg.pool_size):
        expr, value = arithmetic_instance(rng)
        out.keep(f"arith:{i}", f"What is {expr}?", even if value % 2 == 0 else odd, target=str(value))
    return out
