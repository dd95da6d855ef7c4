"""Typed records (docs/store.md): what one experiment produced, enough to rebuild and check
its prompt. The store that keeps them is :mod:`mip.store`.

>>> counted_attempt(record.attempts).verdict          # doctest: +SKIP
<Verdict.CORRECT: 'correct'>

Exercised by ``pytest tests/test_records.py``.

The first valid attempt counts (§3.2), whatever follows it:

>>> first = Attempt(index=0, verdict="invalid", invalid_kind="parse")
>>> second = Attempt(index=1, verdict="correct", answer="pos")
>>> third = Attempt(index=2, verdict="incorrect", answer="neg")
>>> counted_attempt([first, second, third]).index, counted_attempt([first]).index, counted_attempt([])
(1, 0, None)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from pydantic import BaseModel, Field, ValidationError

from mip.experiment.scoring import InvalidKind, Verdict, verdicts_as

SCHEMA_VERSION = 1


class Experiment(BaseModel):
    """One prompt sent to one model: the cell of the grid that a record answers."""

    model: str = Field(description="Model registry name.")
    task: str = Field(description="Task registry name.")
    n: int = Field(description="Instance count.")
    p: float = Field(description="Majority proportion.")
    majority_label: str = Field(description="y_maj.")
    seed: int = Field(description="Selection seed s.")
    pattern: str = Field(description="Order pattern registry name.")
    order_seed: Optional[int] = Field(default=None, description="s_order; random pattern only.")
    shuffle_seed: Optional[int] = Field(
        default=None, description="Expanded orderings (§5.2.1): X_maj and X_min shuffled independently before a "
        "structured pattern.")
    prompt_variant: str = Field(description="A prompt variant of App. B (mip.strategies.variants).")
    budget: str = Field(description="Budget name (20k, 100k, smoke, …).")
    strategy: str = Field(default="single_call",
                          description="Aggregation strategy: single_call (the paper), count_report, decomposed.")


class CallOutput(BaseModel):
    """What one model call returned: the fields a backend's :class:`mip.models.Completion`
    hands over and a record's :class:`Stage` keeps, defined once."""

    output: Optional[str] = Field(default=None, description="Final content returned by the model.")
    reasoning: Optional[str] = Field(default=None,
                                     description="Reasoning trace, verbatim, where the backend returns one.")
    finish_reason: Optional[str] = Field(default=None, description="stop, length, …")
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    reasoning_tokens: Optional[int] = None
    max_tokens: Optional[int] = Field(default=None, description="Output-token limit the call ran under (the request's, "
                                      "set where the call is recorded: mip.strategies.stage_of).")
    latency_s: Optional[float] = None
    usage: dict[str, Any] = Field(default_factory=dict, description="The backend's usage report, in full.")
    reasoning_raw: dict[str, Any] = Field(
        default_factory=dict, description="The server's other reasoning fields, verbatim (reasoning_details, or a "
        "field whose text differs from the trace). Before mip 0.2 this also repeated the trace's own field.")
    reasoning_from: list[str] = Field(
        default_factory=list, description="Response fields the trace was taken from, stored once, in `reasoning`: a "
        "field whose value was exactly the trace; `reasoning_details` when its text parts were the trace (its "
        "items are kept in `reasoning_raw` without that text); `content` when the trace opened the content in "
        "<thought> blocks (Gemini), which are then not in `output`.")
    provider: Optional[str] = Field(default=None, description="Who served the request, where the server says.")
    served_model: Optional[str] = Field(default=None, description="The model id the server reports.")
    context_refusal: Optional[str] = Field(
        default=None, exclude_if=lambda v: v is None,  # absent unless set: records written before stay byte for byte
        description="The server's refusal of the prompt as longer than its context window (HTTP status and message): "
        "the attempt is an input_overflow (App. D.1), found by the provider rather than before the call.")


class _StageHead(BaseModel):
    """A stage's own fields. A base of their own only so that they come first in a record's
    JSON, where records have always had them: pydantic orders fields base first."""

    name: str = Field(description="'answer', or 'instruction' for self-prompting's first stage.")
    prompt: Optional[str] = Field(default=None, description="The prompt, kept where it is not rebuildable (stage one).")
    prompt_hash: str = Field(description="sha256 of the prompt text.")


class Stage(CallOutput, _StageHead):
    """One model call inside an attempt (self-prompting has two): its prompt and what it
    returned (made from a backend's Completion by :func:`mip.strategies.stage_of`)."""


class Attempt(BaseModel):
    """One try at an experiment; up to ``max_attempts``, the first valid one counts."""

    index: int
    stages: list[Stage] = Field(default_factory=list)
    answer: Optional[str] = Field(default=None, description="Parsed label, '-1' for a tie, None if unparsed.")
    verdict: Verdict = Field(description="correct, incorrect or invalid (mip.experiment.scoring.Verdict).")
    invalid_kind: Optional[InvalidKind] = Field(default=None, description="input_overflow, parse or truncated "
                                                "(mip.experiment.scoring.InvalidKind); None unless invalid.")
    counts: Optional[dict[str, int]] = Field(default=None,
                                             description="count_report: the per-label counts the model gave.")


class Record(BaseModel):
    """Everything one experiment produced, enough to rebuild and check its prompt."""

    schema_version: int = SCHEMA_VERSION
    key_scheme: int = Field(default=1, description="How `key` was made (mip.experiment.keys): 1 before mip 0.3 (a "
                            "subset of the settings), 2 every answer-shaping setting. Records written before 0.3 "
                            "read as 1.")
    key: str = Field(description="Stable hash of the experiment, its pool and every setting that shapes its answer.")
    experiment: Experiment
    pool_version: str = Field(description="Content hash of the pool the instances were drawn from.")
    pool_filtered: bool = Field(default=False,
                                description="Whether the pool was filtered by model agreement (App. C.1).")
    instance_ids: Sequence[str] = Field(description="Presented instance ids, in prompt order (a list when read; a job "
                                        "writes them from the pool's JSON column, mip.data.columns).")
    instance_labels: Sequence[str] = Field(description="Gold labels of the presented instances, in prompt order.")
    prompt_hash: str = Field(description="sha256 of the final prompt (stage two for self-prompting).")
    prompt_tokens: Optional[int] = Field(default=None,
                                         description="Tokens of the final prompt, chat template included.")
    attempts: list[Attempt] = Field(default_factory=list, description="Every attempt paid, in order, also those a "
                                    "killed job made (kept under the store's .attempts/ until the record was written).")
    attempts_allowed: Optional[int] = Field(default=None, description="Attempts this experiment could have (§3.2: up "
                                            "to max_attempts; 1 for a model whose config says it decodes "
                                            "deterministically). None before mip 0.3 (see config).")
    answer: Optional[str] = None
    verdict: Verdict = Field(description="The counted attempt's verdict (mip.experiment.scoring.Verdict); invalid "
                             "with no attempt for an input overflow.")
    invalid_kind: Optional[InvalidKind] = Field(
        default=None, description="Why it is invalid (mip.experiment.scoring.InvalidKind).")
    scoring_rule: Optional[int] = Field(default=None, description="The answer rule that gave the verdict "
                                        "(mip.experiment.scoring.RULE_VERSION); None before mip 0.3 (rule 1).")
    predictions: Optional[list[Optional[str]]] = Field(
        default=None,
        description="decomposed: the label given to each presented instance, in prompt order (None: missing).")
    reported_counts: Optional[dict[str, int]] = Field(default=None,
                                                      description="count_report: the counted attempt's counts.")
    config: dict[str, Any] = Field(default_factory=dict,
                                   description="Model, budget and generation config, secrets removed.")
    git_commit: Optional[str] = None
    mip_version: Optional[str] = None
    created_at: str = Field(description="UTC time the record was written (ISO 8601).")


def schema_error(error: ValidationError) -> str:
    """The first field that failed and what it should hold, on one line
    (``verdict: Input should be 'correct', 'incorrect' or 'invalid', got 'maybe'``)."""
    first = error.errors(include_url=False)[0]
    where = ".".join(map(str, first["loc"]))
    got = first.get("input")
    shown = f", got {got!r}" if where and isinstance(got, (str, int, float)) and len(repr(got)) <= 80 else ""
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{shown}{more}"


def counted_attempt(attempts: Sequence[Attempt]) -> Attempt | None:
    """The attempt whose verdict is the experiment's (§3.2): the first valid one, else the
    last one, else None (an experiment stored before any call, e.g. an input overflow)."""
    return next((a for a in attempts if a.verdict.valid), attempts[-1] if attempts else None)


def budget_limits(record: Record) -> dict[str, Any]:
    """The limits a record ran under, from its config: output tokens, the answer's share where
    the model splits it, and the limit its budget's name stands for (the slice is labelled over
    a whole table: :func:`mip.config.budgets.labels`).

    >>> smoke_at_999 = {"budget": {"name": "smoke", "max_tokens": 999, "stated_tokens": 320}}
    >>> budget_limits(Record.model_construct(config=smoke_at_999))
    {'budget_tokens': 999, 'budget_answer': None, 'budget_stated': 320}
    """
    budget = record.config.get("budget") if isinstance(record.config.get("budget"), dict) else {}
    model = record.config.get("model") if isinstance(record.config.get("model"), dict) else {}
    split = model.get("budget_split") if isinstance(model.get("budget_split"), dict) else {}
    return {"budget_tokens": budget.get("max_tokens"), "budget_answer": split.get("answer_tokens"),
            "budget_stated": budget.get("stated_tokens")}


#: The rule whose verdicts a record's are, by its rule and pool version (a pool holds one task's two labels).
_RULES: dict[tuple[Optional[int], str], int] = {}


def verdicts_rule(record: Record) -> int:
    """The answer rule whose verdicts the record's are: rule 2's are rule 3's where its task's
    labels hold no space or hyphen (:func:`mip.experiment.scoring.verdicts_as`); found once per pool.

    >>> verdicts_rule(Record.model_construct(scoring_rule=None, pool_version="p", instance_labels=["a"],
    ...                                      experiment=Experiment.model_construct(majority_label="a", p=0.5)))
    1
    """
    which = (record.scoring_rule, record.pool_version)
    if which not in _RULES:
        rule = verdicts_as(record.scoring_rule, {record.experiment.majority_label, *record.instance_labels})
        if record.experiment.p < 1:  # its prompt shows both labels
            _RULES[which] = rule
        return rule
    return _RULES[which]
