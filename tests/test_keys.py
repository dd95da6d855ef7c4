"""An experiment's identity (mip.experiment.keys): the key holds every setting that shapes an answer,
and a field added to a config later cannot slip past it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mip.config import ModelConfig, OpenAICompatModelConfig
from mip.experiment.planning import plan_job
from mip.strategies import build
from mip.job import load_pools
from mip.experiment.keys import IN_EXPERIMENT, KEY_SCHEME, not_answer_shaping
from mip.experiment.records import Record

from .conftest import compose

SPECIAL = {"n": 20, "p": 0.7, "seed": 1, "order_seeds": [0, 1, 2, 3], "shuffle_seeds": [5], "setting": "other",
           "data_dir": "/elsewhere"}
# Names of registry entries are keyed through the experiment (tests/test_records.py checks
# each experiment field); another value here would name no registered variant or pool.
UNWALKED = {"name"}


def changed(value):
    """Another value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, dict):
        return {**value, "x": 1}
    if isinstance(value, list):
        return [*value, "x"]
    return "x"  # an unset optional field


def leaves(obj, prefix=""):
    """Every leaf field of a config dataclass, by dotted name."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from leaves(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}"


def replaced(obj, dotted: str, value):
    head, _, rest = dotted.partition(".")
    if rest:
        return dataclasses.replace(obj, **{head: replaced(getattr(obj, head), rest, value)})
    return dataclasses.replace(obj, **{head: value})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    # Not deterministic, so max_attempts shapes the attempts; two patterns cover order and shuffle seeds.
    cache = tmp_path_factory.mktemp("cache")
    cfgs = [compose("model=mock", "model.deterministic=false", "task=arith", "setting=smoke", "budget=smoke",
                    f"pattern={pattern}", f"paths.cache_dir={cache}") for pattern in ("random", "majority_first")]
    return cfgs, load_pools(cfgs[0])


def keys(cfgs, pools) -> set[str]:
    return {p.key for cfg in cfgs for p in plan_job(cfg, pools, build(cfg.strategy, cfg.prompt_variant.name))}


def walk(cfgs, pools, group: str):
    """(field, whether changing it changed a key) for every leaf of one config group."""
    reference = keys(cfgs, pools)
    if group == "setting":
        scalars = [f.name for f in dataclasses.fields(cfgs[0]) if not dataclasses.is_dataclass(getattr(cfgs[0], f.name))
                   and f.name != "task"]
        for name in scalars:
            value = SPECIAL.get(name, changed(getattr(cfgs[0], name)))
            yield name, keys([dataclasses.replace(c, **{name: value}) for c in cfgs], pools) != reference
        return
    if group == "task":
        task = cfgs[0].task["arith"]
        for name in leaves(task):
            if name in UNWALKED:
                continue
            value = task.labels[::-1] if name == "labels" else changed(_get(task, name))
            new = replaced(task, name, value)
            yield name, keys([dataclasses.replace(c, task={"arith": new}) for c in cfgs], pools) != reference
        return
    node = getattr(cfgs[0], group)
    for name in leaves(node):
        if name in UNWALKED:
            continue
        moved = [dataclasses.replace(c, **{group: replaced(getattr(c, group), name, changed(_get(node, name)))})
                 for c in cfgs]
        yield name, keys(moved, pools) != reference


def _get(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def models_of_every_backend(model):
    """A model config of each registered backend's schema, with ``model``'s common fields."""
    from mip.models import schemas

    common = {f.name: getattr(model, f.name) for f in dataclasses.fields(ModelConfig)}
    return [schema(**{**common, "backend": backend}) for backend, schema in schemas().items()]


def walk_every_schema(cfgs, pools, group: str):
    """walk() over the group; a model's fields under each backend's schema, a strategy's under
    each strategy's (each has its own)."""
    if group == "strategy":
        from mip.strategies import schemas

        for name, schema in schemas().items():
            yield from walk([dataclasses.replace(c, strategy=schema(name=name)) for c in cfgs], pools, group)
        return
    if group != "model":
        yield from walk(cfgs, pools, group)
        return
    for model in models_of_every_backend(cfgs[0].model):
        yield from walk([dataclasses.replace(c, model=model) for c in cfgs], pools, group)


@pytest.mark.parametrize("group", ["model", "budget", "prompt_variant", "strategy", "setting", "task"])
def test_every_field_is_keyed_or_named_as_shaping_no_answer(base, group):
    """A field that changes no key must be on the explicit list, with a reason; a field on
    the list must change no key. A field added later fails here until it is placed."""
    cfgs, pools = base
    from mip.models import schemas as backend_schemas
    from mip.strategies import schemas as strategy_schemas

    per_kind = {"model": backend_schemas, "strategy": strategy_schemas}
    excluded = not_answer_shaping(group, per_kind[group]().values() if group in per_kind else ())
    seen = set()
    for name, keyed in walk_every_schema(cfgs, pools, group):
        seen.add(name)
        listed = any(name == x or name.startswith(x + ".") for x in excluded)  # a listed folder covers its fields
        if name in IN_EXPERIMENT[group]:
            assert keyed, f"{group}.{name} is part of the experiment and must change its key"
        elif keyed:
            assert not listed, f"{group}.{name} changes the key but is listed as shaping no answer"
        else:
            assert listed, (f"{group}.{name} changes no key: add it to the key (mip.experiment.keys.answer_settings) "
                                      "or declare it with mip.config.shaping.setting(default, why=...) on its schema")
    covered = {x for x in excluded if any(n == x or n.startswith(x + ".") for n in seen)}
    assert covered | (IN_EXPERIMENT[group] - UNWALKED) <= seen | covered and covered == set(excluded), f"fields declared shaping no answer that {group} does not have: {set(excluded) - covered}"


def test_the_issues_example_settings_change_the_key(tmp_path):
    """Reasoning, provider routing, quantisations, chat-template arguments, extra body fields
    and the budget split each make another experiment."""
    common = ("model=gemma4_31b", "task=arith", "setting=smoke", "budget=smoke", f"paths.cache_dir={tmp_path}")
    cfg = compose(*common)
    pools = load_pools(cfg)
    reference = keys([cfg], pools)
    for override in ("model.reasoning.enabled=true", "model.provider.order=[Together]",
                     "model.provider.quantizations=[fp8]", "+model.chat_template_kwargs.enable_thinking=true",
                     "+model.extra_body.top_k=1", "model.budget_split.answer_tokens=20", "model.context_window=9000"):
        assert keys([compose(*common, override)], pools) != reference, override
    for override in ("model.max_concurrency=3", "model.request_timeout_s=5", "model.transport=openai",
                     "model.price_input_per_mtok=1.0", "infra_retries=7", "progress=false"):
        assert keys([compose(*common, override)], pools) == reference, override


def test_records_of_mip_0_2_read_as_key_scheme_1():
    """analyze.py reads stores written by 0.2.0: their records have no key_scheme field."""
    old = {"key": "7793328ab186f7157969210a", "experiment": {
        "model": "mock", "task": "arith", "n": 10, "p": 0.6, "majority_label": "even_number", "seed": 0,
        "pattern": "random", "order_seed": 0, "prompt_variant": "standard", "budget": "smoke"},
        "pool_version": "pv", "instance_ids": ["a"], "instance_labels": ["even_number"], "prompt_hash": "h",
        "verdict": "correct", "answer": "even_number", "created_at": "2026-11-30T00:00:00+00:00",
        "config": {"max_attempts": 3, "attempts_made_at_most": 1}}
    record = Record.model_validate_json(json.dumps(old))
    assert record.key_scheme == 1 and record.attempts_allowed is None and KEY_SCHEME == 2


def test_every_model_field_that_reaches_the_request_body_is_keyed(base):
    """The list of fields that shape no answer cannot hide one the server sees: a field whose
    change changes the chat-completions body must change the key."""
    from mip.models import Request
    from mip.models.chat_api import request_body

    cfgs, pools = base
    common = {f.name: getattr(cfgs[0].model, f.name) for f in dataclasses.fields(ModelConfig)}
    chat = OpenAICompatModelConfig(**{**common, "backend": "openai_compat"})  # the backend that sends the body
    cfgs = [dataclasses.replace(c, model=chat) for c in cfgs]
    reference_keys = keys(cfgs, pools)
    request = Request("k", "a prompt", 50)

    def body(model):
        try:
            return request_body(model, request)
        except (TypeError, ValueError):
            return None

    reference = body(chat)
    assert reference is not None
    for name in leaves(chat):
        model = replaced(chat, name, changed(_get(chat, name)))
        if body(model) != reference:
            moved = [dataclasses.replace(c, model=model) for c in cfgs]
            assert keys(moved, pools) != reference_keys, f"model.{name} changes the request body but not the key"


def test_analysis_counts_an_experiment_once_when_a_store_holds_both_key_schemes(tmp_path):
    from mip.analysis.results import load_local
    from mip.store import Store

    from .test_records import make_record

    store = Store(tmp_path)
    store.put(make_record("old-key", key_scheme=1))  # mip 0.2's record of the experiment
    store.put(make_record("new-key", key_scheme=2, scoring_rule=2))  # the same experiment asked again under 0.3
    store.put(make_record("other", key_scheme=1, experiment=make_record().experiment.model_copy(update={"seed": 5})))
    frame = load_local([tmp_path])
    assert sorted(frame["key"]) == ["new-key", "other"]
    assert any("key scheme 1) were left out" in n for n in frame.attrs["notes"])
    assert any("different answer rules" in n for n in frame.attrs["notes"])


def test_the_key_is_the_hash_of_the_sorted_json_of_its_parts():
    """Settings are encoded once per task for speed; the key stays this documented hash."""
    import hashlib

    from mip.experiment.keys import encode_settings, experiment_key
    from mip.experiment.records import Experiment

    e = Experiment(model="m", task="t", n=10, p=0.6, majority_label="é", seed=0, pattern="random", order_seed=1,
                   prompt_variant="standard", budget="smoke")
    settings = {"model": {"x": [1, 2], "y": None, "z": {"b": 1.5, "a": "é"}}, "temperature": 0.0}
    payload = {"scheme": KEY_SCHEME, "experiment": e.model_dump(), "pool": "pv", "settings": settings}
    reference = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:24]
    assert experiment_key(e, "pv", settings) == experiment_key(e, "pv", encode_settings(settings)) == reference


#: The key of one fixed experiment under each shipped model config, computed by mip before
#: model configs had one schema per backend (key scheme 2). Records stored under these keys
#: must be found again, never paid for twice: a change to a model's schema must leave them
#: as they are. Only a deliberate key change (a new template version, a new key scheme)
#: updates this table, with a README note on what reruns cost.
SHIPPED_KEYS = {
    # the DeepSeek V4 configs ask for reasoning and leave temperature out (thinking mode ignores
    # it), GPT-5.4 nano leaves it out (its provider refuses 0) and MiniMax M2.7 sends 0.01 (MiniMax
    # refuses 0): other bodies, so other experiments, on purpose (CHANGELOG).
    "deepseek_v4_flash": "27d2b36f14300522549b6ad0",
    "deepseek_v4_pro": "165d8f8076f435dc1be1bfde",
    "gemini31_flash_lite": "556e24e37f4adda87bb0bd7d",
    "gemini31_pro": "0206abd4b1b91e56b8f80fe3",
    "gemma4_26b_a4b": "270e4c3c1a66906fa484f96c",
    "gemma4_31b": "130a74387f8b15539f1171e2",
    "gpt54_nano": "2b2bc8e13edc9417d8d6387c",
    "gpt_oss_120b": "0b2a5477c4d080a49e0dca1a",
    "grok41_fast": "0fa678b266d6fc3eafec51dc",
    "llama4_maverick": "2d3c959f354d5899568ca928",
    "llama4_scout": "13c6ee65da7ed03f540928ed",
    "minimax_m27": "136519155f24f89c3343d614",
    "mock": "1de4736a4cf63cba9f908c6e",
    "qwen36_35b": "00fc85f7df741c3dfd9897c2",
    "qwen36_plus": "4dc93473c2c20928d8deff44",
    "qwen3_4b_instruct": "1ba4ef1442b4f47aafa014e0",
    # Re-keyed 2026-12-02 when read_first moved out of model_id into their own schema (README,
    # "Simulated models"): scripted models, rerun in milliseconds at no cost.
    "simulated_first_k": "1e971ea6122149f739236140",
    "simulated_unbiased": "18888b2f71219be61643db41",
    "smollm2_135m": "1a0e2dd17cf3f51c5714e7ee",
    "smollm2_135m_server": "0aee1c7471bc4e72ff28bfb1",
}


def test_every_shipped_model_keeps_the_keys_its_stored_records_have(tmp_path):
    """The first planned key of a fixed smoke experiment (arith, random pattern, seed 0) under
    each model config shipped then: the keys records were stored under stay the keys."""
    pools = None
    for name in SHIPPED_KEYS:
        cfg = compose(f"model={name}", "task=arith", "setting=smoke", "budget=smoke", "pattern=random",
                      "use_filtered=false", f"paths.cache_dir={tmp_path / 'cache'}", f"paths.results_dir={tmp_path}")
        pools = pools or load_pools(cfg)
        assert min(p.key for p in plan_job(cfg, pools, build(cfg.strategy, cfg.prompt_variant.name))) == SHIPPED_KEYS[name], f"model={name}: its experiment keys changed"


#: Keys of the mock's first smoke experiment under each strategy and prompt variant, computed by
#: mip before each strategy had its own settings schema and self-prompting became a strategy:
#: the records stored under them stay found.
SHIPPED_STRATEGY_KEYS = {
    ("strategy=decomposed", "strategy.batch_size=7"): "69dffdcc896a63064c144347",
    ("strategy=decomposed",): "2104499fa6d17d084e6795b0",
    ("prompt_variant=self_prompt",): "1959eae19f9c000cc5b13334",
    ("strategy=count_report",): "0a77216dab8ef2b3d71fbaee",
    ("prompt_variant=hint",): "1f84252dc057e6b804544e11",
}


def test_every_strategy_and_variant_keeps_its_keys(tmp_path):
    pools = None
    for overrides, key in SHIPPED_STRATEGY_KEYS.items():
        cfg = compose("model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=random", "use_filtered=false",
                      f"paths.cache_dir={tmp_path / 'cache'}", f"paths.results_dir={tmp_path}", *overrides)
        pools = pools or load_pools(cfg)
        assert min(p.key for p in plan_job(cfg, pools, build(cfg.strategy, cfg.prompt_variant.name))) == key, f"{overrides}: its experiment keys changed"
