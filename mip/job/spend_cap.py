"""``max_cost``: what a sweep (or a single run) may spend, and the confirmation a costly one asks.

Before any request (:func:`refusal`): a sweep whose expected cost (its dry run's, at the
models' prices: :mod:`mip.job.expected_cost`) is over ``max_cost`` is refused; without a cap,
one expected to cost more than ``confirm_cost_above`` asks on a terminal, and off one is refused
unless ``yes=true``. While it runs (:class:`Cap`): once the spend the provider reports
(``usage.cost``), of this job and the sweep's earlier ones, reaches ``max_cost``, the job sends
nothing more and the sweep's later jobs start none.

>>> refusal(0.0042, max_cost=0.001, confirm_above=20.0, yes=False)[:60]
'the sweep is expected to cost $0.0042 (one attempt each, eve'
>>> refusal(0.0042, max_cost=None, confirm_above=20.0, yes=False) is None
True
>>> cap = Cap(0.01, spent_before=0.004)
>>> cap.add(0.005), cap.add(0.002)
(False, True)
"""

from __future__ import annotations

import sys
from collections.abc import Callable


class SpendRefused(ValueError):
    """A run or sweep refused for what it is expected to cost; the message is the one line to print."""


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 else f"${value:,.4f}"


def refusal(expected: float, max_cost: float | None, confirm_above: float, yes: bool, what: str = "sweep",
            ask: Callable[[str], str] | None = None) -> str | None:
    """Why a sweep (or run) of this expected cost may not start, or None: it may."""
    said = f"the {what} is expected to cost {_usd(expected)} (one attempt each, every output limit used whole, at " \
           "the models' prices; dry_run=true shows it per slice)"
    if max_cost is not None:
        return (f"{said}, more than max_cost={max_cost:g}; raise max_cost or narrow the {what}. Nothing was sent."
                if expected > max_cost else None)
    if expected <= confirm_above or yes:
        return None
    if ask is None and sys.stdin.isatty() and sys.stderr.isatty():
        ask = input
    if ask is None:
        return (f"{said}, more than confirm_cost_above={confirm_above:g}, and there is no terminal to confirm it: "
                f"add max_cost=<USD> (the {what} then also stops when its reported spend reaches it) or yes=true. "
                "Nothing was sent.")
    answer = ask(f"{said[0].upper()}{said[1:]}. Start it? Add max_cost=<USD> to cap it. [y/N] ")
    return None if answer.strip().lower() in ("y", "yes") else f"not started ({said}). Nothing was sent."


class Cap:
    """The spend cap of one job: ``max_cost`` less what the sweep's other jobs reported."""

    def __init__(self, max_cost: float | None, spent_before: float = 0.0):
        self.max_cost, self.spent = max_cost, spent_before
        self.reached: str | None = None
        """The one line saying the cap was reached; None while it was not."""

    def add(self, cost: float) -> bool:
        """Count a reported cost; whether the cap is reached (then the job sends nothing more)."""
        self.spent += cost
        if self.max_cost is not None and self.spent >= self.max_cost and self.reached is None:
            self.reached = (f"max_cost reached: the provider reported {_usd(self.spent)} spent by the sweep, at or "
                            f"over max_cost={self.max_cost:g}; stopped sending. What is stored stays: raise max_cost "
                            "and run the same command again to carry on")
        return self.reached is not None
