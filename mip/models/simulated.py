"""A simulated model with a planted, known positional bias: the proof that the analysis
finds an order effect when one is there (and none when there is none).

It reads the prompt of the synthetic ``arith`` task, evaluates the first ``read_first``
instances itself (each expression's parity is its gold label, exactly as the loader
computes it), writes a reasoning trace that names the IDs it read, and answers the
majority of what it read (``-1`` on a tie). ``read_first`` = None reads every instance:
the unbiased control. ``model.read_first`` is a field of its own config schema
(:class:`mip.config.SimulatedModelConfig`), so it is part of every experiment key.

Because the rule is known, every number of the report follows from the pattern
definitions alone (:func:`expected`), whatever instances were selected:

>>> expected("majority_middle", 20, 0.6, 7)["accuracy"]   # 4 minority, then 3 majority read
0.0
>>> expected("soft_majority_middle", 20, 0.6, 7)["accuracy"]
1.0

    python run.py -m model=simulated_first_k task=arith n=20 p=0.6 'pattern=glob(*)' seed=0,1,2 budget=smoke

Exercised by ``pytest tests/test_simulated.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from mip.config import SimulatedModelConfig
from mip.instances import PATTERNS, arrangement, order_seeds_for, split_counts
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request

_CHOICES = re.compile(r'Choose exactly one label from: "([^"]+)", "([^"]+)"')
_INSTANCE = re.compile(r"^Instance (\d+): What is ([0-9+\-×*() ]+)\?$", re.M)


@dataclass(frozen=True)
class SimulatedConfig:
    """The planted rule. ``read_first``: how many leading instances the model reads (None: all)."""

    read_first: Optional[int] = None

    def __post_init__(self) -> None:
        if self.read_first is not None and self.read_first < 1:
            raise BackendSetupError(f"A simulated model reads at least one instance: model.read_first={self.read_first} "
                                    "must be 1 or more, or null to read all.")


def parity_label(expression: str, labels: Sequence[str]) -> str:
    """The label of one arith instance: its value's parity (the loader's rule)."""
    value = eval(expression.replace("×", "*"), {"__builtins__": {}})  # noqa: S307 - digits, + - * and spaces only
    even = next((x for x in labels if "even" in x), None)
    odd = next((x for x in labels if "odd" in x), None)
    if even is None or odd is None:
        raise BackendSetupError(f"The simulated model answers parity tasks (arith); labels {list(labels)} are not.")
    return even if value % 2 == 0 else odd


def respond(prompt: str, rule: SimulatedConfig) -> tuple[str, str]:
    """(answer text, reasoning trace) for one prompt."""
    choices = _CHOICES.search(prompt)
    instances = _INSTANCE.findall(prompt)
    if not choices or not instances:
        return "Evaluate each expression, count even and odd values, and answer the majority label.", ""
    labels = (choices.group(1), choices.group(2))
    read = instances[: rule.read_first] if rule.read_first else instances
    said = [(i, parity_label(expr, labels)) for i, expr in read]
    counts = {label: sum(x == label for _, x in said) for label in labels}
    answer = "-1" if counts[labels[0]] == counts[labels[1]] else max(labels, key=counts.get)
    # The trace names only instance IDs as numbers, so coverage measures exactly what was read.
    trace = "\n".join(f"Instance {i}: {label}." for i, label in said) + f"\nMajority of what I read: {answer}."
    return json.dumps({"answer": answer}), trace


class SimulatedBackend(Backend):
    schema = SimulatedModelConfig
    cost_basis = "none"

    def __init__(self, cfg: SimulatedModelConfig, context: BackendContext | None = None):
        if "simulated" not in cfg.name:
            raise BackendSetupError(f"Model {cfg.name!r}: a simulated model's name must say 'simulated'.")
        self.rule = SimulatedConfig(cfg.read_first)

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        for r in requests:
            text, trace = respond(r.prompt, self.rule)
            yield Completion(r.id, output=text, reasoning=trace or None, finish_reason="stop",
                             prompt_tokens=len(r.prompt) // 4, completion_tokens=(len(text) + len(trace)) // 4,
                             latency_s=0.0)


# --------------------------------------------------------------------------- what it must score


def outcome(order: np.ndarray, n_maj: int, k: Optional[int]) -> tuple[float, int]:
    """(1 correct | 0 wrong or tie, IDs read) for one arrangement (positions into X_maj ⊕ X_min)."""
    read = order[:k] if k else order
    majority = int((read < n_maj).sum())
    return float(majority > len(read) - majority), len(read)


def expected(pattern: str, n: int, p: float, k: Optional[int], order_seeds: Sequence[int] = (0, 1, 2)) -> dict:
    """The simulated model's accuracy under ``pattern`` (mean over the random pattern's order
    seeds), its coverage, and the per-position mention rate, from the pattern definitions
    alone. The same for every selection seed, task label and majority label: the model reads
    each instance's label correctly, so only the arrangement of labels matters."""
    n_maj, n_min = split_counts(n, p)
    results = [outcome(arrangement(n_maj, n_min, pattern, s), n_maj, k) for s in order_seeds_for(pattern, order_seeds)]
    read = results[0][1]
    return {"accuracy": float(np.mean([r[0] for r in results])), "coverage": read / n,
            "mention_rate": [1.0 if i < read else 0.0 for i in range(n)]}


def expected_summary(n: int, p: float, k: Optional[int], order_seeds: Sequence[int] = (0, 1, 2)) -> dict:
    """Table 2's numbers for the core grid (all seven patterns, both labels, any seeds):
    accuracy pooled over experiments (random counts once per order seed), π⁺/π⁻ accuracies
    and Δ; the sd over selection seeds is 0, every seed behaving alike."""
    per = {pattern: expected(pattern, n, p, k, order_seeds)["accuracy"] for pattern in PATTERNS}
    weight = {pattern: len(order_seeds_for(pattern, order_seeds)) for pattern in PATTERNS}
    acc = sum(per[x] * weight[x] for x in PATTERNS) / sum(weight.values())
    return {"acc": acc, "patterns": per, "best_acc": max(per.values()), "worst_acc": min(per.values()),
            "delta": max(per.values()) - min(per.values()), "coverage": expected(PATTERNS[1], n, p, k)["coverage"]}
