"""The prompt templates of App. B: the standard prompt, hint and suggested-strategy
variants, and the two stages of self-prompting.

The task-specific sentences live in each task's config (``task.prompt``); the template
around them is here. The paper's rendering flattened line breaks ("…problems.Instructions:-
Solve…"); we put each sentence, bullet and instance on its own line and separate the
sections with one blank line.

>>> from mip.experiment.prompts import instance_block
>>> instance_block(["a b", "c"])
'Instance 1: a b\\nInstance 2: c'

Exercised by ``pytest tests/test_prompts.py``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence

from mip.config import PromptSpec

#: The prompt variants built on the App. B.1 template; self-prompting (App. B.2.3), whose
#: attempt is two calls, is a strategy (mip.strategies.VARIANT_STRATEGIES).
TEMPLATED: tuple[str, ...] = ("standard", "hint", "strategy")

#: Bump whenever a template below changes: it is part of every experiment key.
TEMPLATE_VERSION = 1

HINT = (
    "Hints:\n"
    "- The input may contain many instances, and the majority label cannot be reliably determined from any "
    "subset or by sampling.\n"
    "- The final answer should be based on processing all provided instances, rather than a partial scan or "
    "estimation."
)

STRATEGY = (
    "Suggested Strategy:\n"
    "- The input may contain a large number of instances, and you must take all of them into account — the "
    "majority cannot be reliably inferred from a subset or by sampling.\n"
    "- If there are many instances, process them in batches: solve and count within each batch, then sum the "
    "per-batch counts and decide the overall majority from those totals."
)

META_TEMPLATE = (
    "Write the instruction prompt that another model will later use to solve the following task over "
    "{num_instances} {input_unit} that are NOT shown to you now:\n\n"
    "Task: {task_spec}\n\n"
    "Produce a single, self-contained instruction prompt, written in the imperative and addressed to the solver. "
    "It must specify {solve_and_count}, how to decide the majority, and how to handle a tie. Write the prompt "
    "itself only — do not solve the task and do not describe yourself."
)


@functools.lru_cache(maxsize=32)
def _numbering(n: int) -> tuple[str, ...]:
    return tuple(("" if i == 1 else "\n") + f"Instance {i}: " for i in range(1, n + 1))


def instance_block(texts: Sequence[str], head: str = "") -> str:
    """The instances as ``Instance i: text`` lines, numbered from 1, after ``head``.

    >>> instance_block(["a", "b"], head="Task\\n")
    'Task\\nInstance 1: a\\nInstance 2: b'

    One join makes the whole prompt: a 200 KB prompt made as ``head + block`` costs two such
    strings, and on this project's machines their allocation (fresh memory pages each time)
    cost more than the joins (0.2 ms against 0.03 ms).
    """
    n = len(texts)
    parts: list[str] = [""] * (2 * n + 1)
    parts[0] = head
    parts[1::2] = _numbering(n)  # made once per size: twice as fast as formatting every line
    parts[2::2] = texts
    return "".join(parts)


def standard_prompt(spec: PromptSpec, labels: Sequence[str], texts: Sequence[str], variant: str = "standard",
                    report_counts: bool = False) -> str:
    """The App. B.1 prompt, with the B.2.1 hint or B.2.2 strategy block when asked.

    ``report_counts`` (the count_report strategy, beyond the paper) asks for the per-label
    counts beside the answer.
    """
    if variant not in TEMPLATED:
        raise ValueError(f"standard_prompt builds standard, hint and strategy prompts, not {variant!r}.")
    return instance_block(texts, head=_standard_header(spec.task, tuple(spec.instructions), tuple(labels), variant,
                                                       report_counts))


@functools.lru_cache(maxsize=64)
def _standard_header(task: str, task_instructions: tuple[str, ...], labels: tuple[str, str], variant: str,
                     report_counts: bool) -> str:
    """Everything of the App. B.1 prompt before the instances (the same for a whole job)."""
    first, second = labels
    instructions = [
        *task_instructions,
        "Count how many instances belong to each label.",
        f'Choose exactly one label from: "{first}", "{second}".',
        "If the counts are tied, answer -1.",
        'Return only a JSON object with the field "answer".',
    ]
    example = {"answer": second}
    if report_counts:
        instructions[-1] = ('Return only a JSON object with the fields "counts" (how many instances have each label) '
                            'and "answer".')
        example = {"counts": {first: 8, second: 12}, "answer": second}
    sections = [f"Task: {task}", "Instructions:\n" + "\n".join(f"- {line}" for line in instructions)]
    if variant == "hint":
        sections.append(HINT)
    elif variant == "strategy":
        sections.append(STRATEGY)
    sections += [
        "Example response format:\n" + json.dumps(example),
        "End your response with the JSON object containing your final answer.",
        "",  # the instances follow
    ]
    return "\n\n".join(sections)


def batch_prompt(spec: PromptSpec, labels: Sequence[str], items: Sequence[tuple[int, str]]) -> str:
    """The decomposed strategy (beyond the paper): label a batch of instances, keeping their
    numbers in the whole set, and return one ``{"id", "label"}`` object per instance."""
    first, second = labels
    ids = [i for i, _ in items]
    example = [{"id": ids[0], "label": second}] + ([{"id": ids[1], "label": first}] if len(ids) > 1 else [])
    instructions = [
        *spec.instructions,
        f'Choose exactly one label from: "{first}", "{second}" for every instance.',
        'Return only a JSON list with one object {"id": <instance number>, "label": <label>} per instance.',
    ]
    return "\n\n".join([
        "Task: Label every provided instance.",
        "Instructions:\n" + "\n".join(f"- {line}" for line in instructions),
        "Example response format:\n" + json.dumps(example),
        "\n".join(f"Instance {i}: {t}" for i, t in items),
    ])


def meta_prompt(spec: PromptSpec, num_instances: int) -> str:
    """Self-prompting, first stage (App. B.2.3): ask for the instruction of stage two."""
    return META_TEMPLATE.format(
        num_instances=num_instances,
        input_unit=spec.input_unit,
        task_spec=spec.task_spec,
        solve_and_count=spec.solve_and_count,
    )


def self_prompt(instruction: str, texts: Sequence[str]) -> str:
    """Self-prompting, second stage: the generated instruction followed by every instance."""
    return instance_block(texts, head=f"{instruction.strip()}\n\n")


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()
