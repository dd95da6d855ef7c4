"""What a provider reported a call cost (``usage.cost``, USD), whatever JSON type it came as.

OpenRouter reports it as a number (https://openrouter.ai/docs/use-cases/usage-accounting);
other gateways send it as text (``"0.00012"``). A record keeps the usage as the server sent it;
every reader of the cost (the job's summary, the analysis rows, the report) reads it here, so a
cost given as text is a number everywhere and a cost that is no number is none.

>>> cost_usd("0.00012"), cost_usd(4e-4), cost_usd(3), cost_usd(True), cost_usd("n/a"), cost_usd(None)
(0.00012, 0.0004, 3.0, None, None, None)
>>> usage_cost({"prompt_tokens": 60, "cost": " 0.5 "}), usage_cost({"prompt_tokens": 60}), usage_cost("x")
(0.5, None, None)
>>> total([None, "0.25", 0.5]), total([None])
(0.75, None)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation


def cost_usd(value: object) -> float | None:
    """``value`` as a cost in USD: a number, or a number written as text; None for anything
    else (a boolean, a negative, a non-finite number, words)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(Decimal(value.strip()))
        except (InvalidOperation, ValueError):
            return None
    else:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def usage_cost(usage: object) -> float | None:
    """The ``cost`` of a reply's ``usage`` object (:func:`cost_usd`), or None."""
    return cost_usd(usage.get("cost")) if isinstance(usage, Mapping) else None


def total(costs: Iterable[object]) -> float | None:
    """The sum of the costs that are readable (:func:`cost_usd`); None when none is."""
    read = [c for c in map(cost_usd, costs) if c is not None]
    return sum(read) if read else None
