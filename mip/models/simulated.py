"""Planted models: test instruments with a known positional bias, not LLMs. They prove that
the analysis finds an order effect when one is there (and none when there is none).

A planted model reads only some instances of a prompt — the first ``read_first``, the last
``read_last``, or every one when both are null (the unbiased control) — takes the gold label
of each instance it reads from the job's pool (it does not solve the task: it looks the
instance's text up in the pool the job hands it, :meth:`SimulatedBackend.prepare`), writes a
reasoning trace that names the IDs it read, and answers the majority of what it read in the
App. B format (``{"answer": <label>}``, ``-1`` on a tie; with per-label counts where the
prompt asks for them). So it answers every task with a pool — the paper's five, arith, a
user's table — and every prompt variant; the decomposed strategy's per-instance batches it
does not answer, and a job that asks them is refused before any call
(:meth:`SimulatedBackend.refuses`).

``model.read_first`` and ``model.read_last`` are fields of its own config schema
(:class:`mip.config.SimulatedModelConfig`), so they are part of every experiment key.
What it must score under each pattern follows from App. C.3 alone: ``tests/planted.py``
writes that closed form without this package's pattern code, and ``tests/test_simulated.py``
checks the analysis against it.

    python run.py -m model=simulated_first_k,simulated_last_k task=arith n=20 p=0.6 'pattern=glob(*)' \\
        seed=0,1,2 budget=smoke
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from mip.config import SimulatedModelConfig
from mip.models.base import Backend, BackendContext, BackendSetupError, Completion, Request

if TYPE_CHECKING:
    from mip.config import Config
    from mip.data import Pool

_CHOICES = re.compile(r'Choose exactly one label from: "([^"]+)", "([^"]+)"')
_COUNTS = 'the fields "counts"'
#: Strategies whose prompts a planted model answers: one prompt with every instance.
ANSWERED_STRATEGIES = ("single_call", "count_report")
#: What stage one of self-prompting gets back (no digit: traces name only instance IDs as numbers).
INSTRUCTION = ("Read the instances, take each one's label, count the two labels and answer the majority label as a "
               'JSON object with the field "answer"; on a tie answer tie.')


@dataclass(frozen=True)
class SimulatedConfig:
    """The planted rule: read the first ``read_first`` instances, the last ``read_last``, or all."""

    read_first: Optional[int] = None
    read_last: Optional[int] = None

    def __post_init__(self) -> None:
        for name in ("read_first", "read_last"):
            k = getattr(self, name)
            if k is not None and k < 1:
                raise BackendSetupError(f"A planted model reads at least one instance: model.{name}={k} must be 1 or "
                                        "more, or null.")
        if self.read_first is not None and self.read_last is not None:
            raise BackendSetupError("A planted model reads the first or the last instances, not both: set "
                                    "model.read_first or model.read_last, and the other to null.")

    def read(self, n: int) -> range:
        """The 0-based positions it reads of n instances."""
        if self.read_first is not None:
            return range(min(self.read_first, n))
        if self.read_last is not None:
            return range(max(0, n - self.read_last), n)
        return range(n)

    @property
    def which(self) -> str:
        """What it reads, in words and without a digit (its trace names only IDs as numbers)."""
        return "only the leading instances" if self.read_first else "only the trailing instances" \
            if self.read_last else "every instance"


def instance_texts(prompt: str) -> list[str]:
    """The texts of ``Instance 1: …``, ``Instance 2: …`` in prompt order (a text may hold line
    breaks: each runs to the next instance's marker, the last to the end of the prompt).

    >>> instance_texts("Task: x\\n\\nInstance 1: a\\nb\\nInstance 2: c")
    ['a\\nb', 'c']
    """
    if prompt.startswith("Instance 1: "):
        start = 0
    elif (start := prompt.find("\nInstance 1: ") + 1) == 0:
        return []
    texts, i = [], 1
    pos = start + len("Instance 1: ")
    while True:
        nxt = prompt.find(f"\nInstance {i + 1}: ", pos)
        if nxt < 0:
            texts.append(prompt[pos:])
            return texts
        texts.append(prompt[pos:nxt])
        i += 1
        pos = nxt + len(f"\nInstance {i}: ")


class GoldLabels:
    """The gold label of every instance text of the job's pools (a pool keeps each text once,
    with one label: :mod:`mip.data.pools`)."""

    def __init__(self, pools: Mapping[str, Pool]):
        self.pools = [(pool.labels, dict(zip(pool.columns.texts.tolist(), pool.columns.labels.tolist())))
                      for pool in pools.values()]

    def of(self, texts: Sequence[str], choices: Optional[tuple[str, str]]) -> tuple[tuple[str, str], list[str]]:
        """(the task's labels, the gold label of each text) from the one pool that holds them all."""
        found = [(labels, [lookup[t] for t in texts]) for labels, lookup in self.pools
                 if (choices is None or set(labels) == set(choices)) and all(t in lookup for t in texts)]
        if not found or any(gold != found[0][1] for _, gold in found[1:]):
            raise RuntimeError("planted model: the prompt's instances are not in exactly one pool of this job "
                               f"({'none holds them' if not found else 'two pools disagree on their labels'}).")
        return choices or found[0][0], found[0][1]


def _name(label: str, labels: Sequence[str]) -> str:
    """How the trace names a label: as it is, or ``label A``/``label B`` if it holds a digit."""
    return f"label {'AB'[list(labels).index(label)]}" if any(c.isdigit() for c in "".join(labels)) else label


def respond(prompt: str, rule: SimulatedConfig, gold: GoldLabels) -> tuple[str, str]:
    """(answer text, reasoning trace) for one prompt."""
    texts = instance_texts(prompt)
    if not texts:  # self-prompting's stage one: the instruction for stage two
        return INSTRUCTION, ""
    choices = _CHOICES.search(prompt)
    read = rule.read(len(texts))
    labels, said = gold.of([texts[i] for i in read], (choices.group(1), choices.group(2)) if choices else None)
    counts = {label: said.count(label) for label in labels}
    answer = "-1" if counts[labels[0]] == counts[labels[1]] else max(labels, key=counts.__getitem__)
    # The trace names instance IDs as its only numbers, so coverage measures exactly what was read.
    lines = [f"Planted model, a test instrument and not an LLM: I read {rule.which} and take their gold labels "
             "from the pool."]
    lines += [f"Instance {i + 1}: {_name(label, labels)}." for i, label in zip(read, said)]
    lines.append(f"Majority of what I read: {'tie' if answer == '-1' else _name(answer, labels)}.")
    reply = {"counts": counts, "answer": answer} if _COUNTS in prompt else {"answer": answer}
    return json.dumps(reply), "\n".join(lines)


class SimulatedBackend(Backend):
    schema = SimulatedModelConfig
    cost_basis = "none"

    def __init__(self, cfg: SimulatedModelConfig, context: BackendContext | None = None):
        self.rule = SimulatedConfig(cfg.read_first, cfg.read_last)
        self.gold: GoldLabels | None = None

    @classmethod
    def refuses(cls, cfg: Config) -> Optional[str]:
        SimulatedConfig(cfg.model.read_first, cfg.model.read_last)  # type: ignore[attr-defined]
        if cfg.strategy.name not in ANSWERED_STRATEGIES:
            return (f"{cfg.model.name} is a planted model: it answers one prompt holding every instance "
                    f"(strategy {' or '.join(ANSWERED_STRATEGIES)}), not the {cfg.strategy.name} strategy's; "
                    "run it with strategy=single_call.")
        return None

    def prepare(self, pools: Mapping[str, Pool]) -> None:
        self.gold = GoldLabels(pools)

    def check(self) -> None:
        if self.gold is None:
            raise BackendSetupError("A planted (simulated) model answers run.py jobs only: the labels it reads come "
                                    "from the job's pools. Use a real model here.")

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        if self.gold is None:
            self.check()
        for r in requests:
            text, trace = respond(r.prompt, self.rule, self.gold)  # type: ignore[arg-type]
            yield Completion(r.id, output=text, reasoning=trace or None, finish_reason="stop",
                             prompt_tokens=len(r.prompt) // 4, completion_tokens=(len(text) + len(trace)) // 4,
                             latency_s=0.0)
