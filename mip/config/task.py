"""The schema of a task (``conf/task/*.yaml``): where its rows come from, its labels, and the
task-specific text of the App. B templates (the templates themselves are Python, mip.experiment.prompts).

    python run.py task=sentiment --cfg job      # the composed task config
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING

from mip.config.shaping import setting


def label_key(text: str) -> str:
    """What an answer and a label are compared as (:mod:`mip.experiment.scoring`): case, spaces,
    hyphens and underscores aside, the same for both, so ``Even number``, ``even-number`` and
    ``even_number`` name one label.

    >>> label_key("Even number") == label_key("even-number") == label_key("even_number")
    True
    """
    return str(text).casefold().replace(" ", "_").replace("-", "_")


def two_distinct_labels(labels) -> bool:
    """Whether ``labels`` are exactly two distinct labels, as every task (and an audit's
    collection) needs: the one home of this check. Two labels that an answer cannot tell apart
    (:func:`label_key`: ``even number`` and ``Even_Number``) are not distinct.

    >>> two_distinct_labels(["neg", "pos"]), two_distinct_labels(["a", "A"]), two_distinct_labels(["a", "b", "c"])
    (True, False, False)
    """
    return len(labels) == 2 and label_key(labels[0]) != label_key(labels[1])


def unwritable_label(labels) -> str | None:
    """The first label a model cannot copy into its answer as the prompt shows it, or None.

    The prompt shows each label between double quotes (``Choose exactly one label from: "pos",
    "neg".``) and asks for ``{"answer": <label>}``: a label holding a double quote, a backslash
    or a control character (a line break, a tab) must be escaped inside a JSON string, so a
    model that copies it as shown writes JSON that does not parse, or another label. Such a
    label is refused when the job is checked, before it runs (:func:`mip.job.checks.settings`).

    >>> unwritable_label(["neg", "pos"]), unwritable_label(["a", 'say "b"'])
    (None, 'say "b"')
    """
    import json

    for label in labels:
        text = str(label)
        if json.dumps(text, ensure_ascii=False)[1:-1] != text:
            return text
    return None


@dataclass
class SourceConfig:
    """Where a task's rows come from and how they are read (see :mod:`mip.data.sources`)."""

    loader: str = MISSING
    """Registry name: gsm8k, wikiann, tweeteval_the, sst2, coarsewsd_java, table, synthetic_arith."""
    hub_path: Optional[str] = None
    hub_name: Optional[str] = None
    hub_splits: list[str] = field(default_factory=list)
    local_dir: str = ""
    """Folder under ``data_dir`` holding the native files."""
    local_files: list[str] = field(default_factory=list)
    """Files (or split names, for loaders that derive file names) under ``local_dir``."""
    subsets: list[str] = field(default_factory=list)
    """TweetEval subsets read first."""
    fallback_subsets: list[str] = field(default_factory=list)
    """TweetEval subsets pooled in when ``subsets`` hold too few tweets of a label."""
    path: Optional[str] = None
    """table loader: a .csv, .tsv, .jsonl or .parquet file."""
    text_column: str = "text"
    label_column: str = "label"
    label_map: dict[str, str] = field(default_factory=dict)
    """table loader: raw label value → task label; empty means the values are the labels."""
    size: int = 0
    """synthetic loader: rows to generate (0: four times the pool size)."""


@dataclass
class PromptSpec:
    """The task-specific text of the App. B templates. The templates are Python (mip.experiment.prompts)."""

    task: str = MISSING
    """The sentence after ``Task:``."""
    instructions: list[str] = field(default_factory=list)
    """Task-specific instruction lines, before "Count how many instances belong to each label."."""
    input_unit: str = "instances"
    """Self-prompting <INPUT_UNIT>."""
    task_spec: str = ""
    """Self-prompting <TASK_SPEC>."""
    solve_and_count: str = ""
    """Self-prompting <SOLVE_AND_COUNT>."""


@dataclass
class FilterSpec:
    """The single-instance question of a task, for filtering (App. C.1)."""

    instruction: str = ""
    answer: str = "label"
    """label (one of the two labels), number (checked numerically) or count (checked exactly)."""


@dataclass
class TaskConfig:
    name: str = MISSING
    labels: list[str] = MISSING
    """The two labels, in the order of the prompt's "Choose exactly one label from"; the example
    answer is the second."""
    source: SourceConfig = setting(factory=SourceConfig,
                                   why="where the rows come from; the pool version hashes the pool's content")
    pool_size: int = setting(5000, why="the pool version hashes the pool's content")
    """Instances in the pool, half of each label (App. C.1)."""
    pool_seed: int = setting(0, why="the pool version hashes the pool's content")
    prompt: PromptSpec = field(default_factory=PromptSpec)
    filter: FilterSpec = setting(factory=FilterSpec,
                                 why="filtering's own question; a filtered pool has its own version")
