"""An experiment's identity: the key that says two experiments would get the same answer.

The key hashes the experiment (model, task, n, p, y_maj, seeds, pattern, variant, budget,
strategy), the pool version, and every setting that shapes the answer: each field that
changes the request body, the decoding, the number of attempts allowed, or how the output
is scored. Every other config field is declared on the field itself, with the reason it
cannot change an answer (``setting(default, why=...)``, :mod:`mip.config.shaping`; listed by
:func:`not_answer_shaping`); ``tests/test_keys.py`` walks every field of the model (under
each backend's schema), budget, strategy, prompt-variant and setting configs and fails on
one that is in neither, so a field added later cannot slip past the key.

>>> settings = {**answer_settings(cfg), "task": task_settings(task)}    # doctest: +SKIP
>>> key = experiment_key(experiment, pool.version, settings)   # doctest: +SKIP

Key schemes: 1 (mip ≤ 0.2) hashed a hand-picked subset (model id, backend, GGUF file,
dtype, budget tokens, attempts, template version), which missed reasoning settings,
provider routing, chat-template arguments, extra body fields and the budget split.
2 (this module) hashes every answer-shaping field. Records carry their scheme.

Model configs had one wide schema holding every backend's fields when scheme 2 began;
now each backend has its own (:mod:`mip.config.model`). The key stays scheme 2, byte for
byte: the keyed fields a backend's schema lacks enter the key at their old defaults
(:data:`SCHEME_2_MODEL_DEFAULTS`), the values every shipped config of that backend had (a
backend never read them; only a command-line override could have set another). That keeps
every stored record found with no second lookup, where a scheme 3 would need a read-side
fallback that rebuilt the scheme-2 key from these same defaults anyway.
``tests/test_keys.py`` holds the keys of each shipped model config from before the split.

>>> encode_settings({"b": 1, "a": [1, 2]})   # sorted JSON, the bytes a key hashes
'{"a": [1, 2], "b": 1}'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from mip.experiment import prompts
from mip.config import BudgetConfig, Config, PromptVariantConfig, TaskConfig, shaping
from mip.config.shaping import shapes_answer
from mip.experiment.records import Experiment

KEY_SCHEME = 2

#: Keyed fields of the one wide model schema of key scheme 2, at its defaults: a backend's
#: schema that lacks one is keyed as if it held this value, as every config of that backend
#: did then. Frozen: a field added to a schema later is keyed through the schema alone.
SCHEME_2_MODEL_DEFAULTS: dict[str, Any] = {
    "gguf_file": None, "dtype": "float32", "mock": {"answer": None}, "max_tokens_param": "max_tokens",
    "provider": {"order": [], "allow_fallbacks": False, "require_parameters": True, "quantizations": []},
    "reasoning": {}, "chat_template_kwargs": {}, "extra_body": {},
    "budget_split": {"answer_tokens": None, "reasoning_field": "reasoning.max_tokens"},
    "engine_kwargs": {}, "reasoning_parser": None,
}

#: Fields added to a schema after records of its configs were stored, with the value every
#: config had before: keyed only when set to another value, so those records keep their keys.
KEYED_WHEN_SET: dict[str, dict[str, Any]] = {"model": {"read_last": None, "temperature": 0.0,
                                                          "budget_split.max_tokens_counts_reasoning": True}}

#: Keyed fields of the one strategy schema of key scheme 2 (decomposed's settings, on every
#: strategy then), at its defaults: each strategy now has its own schema
#: (:mod:`mip.strategies`), and one that lacks these is keyed as if it held them, as every job did.
SCHEME_2_STRATEGY_DEFAULTS: dict[str, Any] = {"batch_size": 50, "max_reasks": 2}

#: Fields keyed through the experiment itself (mip.experiment.records.Experiment), not the settings.
IN_EXPERIMENT: dict[str, frozenset[str]] = {
    "model": frozenset({"name"}), "budget": frozenset({"name"}), "prompt_variant": frozenset({"name"}),
    "strategy": frozenset({"name"}), "task": frozenset({"name"}),
    "setting": frozenset({"n", "p", "seed", "order_seeds", "shuffle_seeds"}),
}

#: The schemas of each group whose fields are keyed (``setting``: the job config's own fields).
_SCHEMAS = {"budget": BudgetConfig, "prompt_variant": PromptVariantConfig, "task": TaskConfig}


def not_answer_shaping(group: str, schemas: Iterable[type] = ()) -> dict[str, str]:
    """Each field of ``group``'s schemas that shapes no answer, by dotted name, with the reason
    declared on the field (:func:`mip.config.shaping.setting`): what the key leaves out. The
    ``model`` and ``strategy`` groups have a schema per backend or strategy: the caller passes
    them (``mip.models.schemas().values()``), since this module sits below both packages."""
    if group == "setting":
        return {f.name: f.metadata["why"] for f in dataclasses.fields(Config) if not shapes_answer(f)}
    chosen = list(schemas) or [_SCHEMAS[group]]
    return {name: why for schema in chosen for name, why in shaping.not_answer_shaping(schema).items()}


def attempts_allowed(cfg: Config) -> int:
    """How many attempts an experiment may have (§3.2): up to ``max_attempts``, the first
    valid one counting, unless the model config says its decoding is deterministic (greedy
    local decoding returns the same text again, so a second attempt is not paid for).
    The config alone decides; records carry the number."""
    return 1 if cfg.model.deterministic else cfg.max_attempts


def _keyed(obj: Any, group: str, prefix: str = "") -> dict[str, Any]:
    """The fields of a config dataclass that shape answers and are not in the experiment,
    nested ones by dotted name."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        name = f"{prefix}{f.name}"
        value = getattr(obj, f.name)
        if not shapes_answer(f) or name in IN_EXPERIMENT[group]:
            continue
        if name in KEYED_WHEN_SET.get(group, {}) and value == KEYED_WHEN_SET[group][name]:
            continue
        if dataclasses.is_dataclass(value):
            out[f.name] = _keyed(value, group, f"{name}.")
        else:
            out[f.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def answer_settings(cfg: Config) -> dict[str, Any]:
    """Every setting of a job that shapes its answers (every field not declared with
    :func:`mip.config.shaping.setting`; see :func:`not_answer_shaping`)."""
    return {
        "model": {**SCHEME_2_MODEL_DEFAULTS, **_keyed(cfg.model, "model")},
        "budget": _keyed(cfg.budget, "budget"),
        "prompt_variant": _keyed(cfg.prompt_variant, "prompt_variant"),
        "strategy": {**SCHEME_2_STRATEGY_DEFAULTS, **_keyed(cfg.strategy, "strategy")},
        "attempts_allowed": attempts_allowed(cfg),  # max_attempts, unless the model is deterministic
        "temperature": getattr(cfg.model, "temperature", 0.0),  # a model's own where its schema has one
        "template_version": prompts.TEMPLATE_VERSION,
    }


def task_settings(task: TaskConfig) -> dict[str, Any]:
    """The fields of a task that shape its prompts (labels and the App. B texts)."""
    return _keyed(task, "task")


class EncodedSettings(str):
    """Answer settings as the key hashes them (sorted JSON), encoded once per job and task:
    they are the same for every experiment, and encoding them took most of planning's time."""


def encode_settings(settings: dict[str, Any]) -> EncodedSettings:
    return EncodedSettings(json.dumps(settings, sort_keys=True, default=str))


def experiment_key(experiment: Experiment, pool_version: str, settings: dict[str, Any] | EncodedSettings) -> str:
    """Hash of the experiment, its pool and the settings that shape its answer: the same key
    means the same call, so a stored record is never paid for twice.

    The bytes hashed are ``json.dumps({"scheme", "experiment", "pool", "settings"},
    sort_keys=True)``, assembled here from the pre-encoded settings."""
    if not isinstance(settings, EncodedSettings):
        settings = encode_settings(settings)
    text = (f'{{"experiment": {json.dumps(experiment.model_dump(), sort_keys=True, default=str)}, '
            f'"pool": {json.dumps(pool_version)}, "scheme": {KEY_SCHEME}, "settings": {settings}}}')
    return hashlib.sha256(text.encode()).hexdigest()[:24]
