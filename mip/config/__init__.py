"""Structured config: the dataclass schemas that the YAML files under ``conf/`` extend.

They are registered in Hydra's ConfigStore by :func:`register` (``config_schema``, the
primary config's base, and one ``model_schema/<backend>`` per backend), so a wrong key or
type in any YAML file or override fails at composition time, on the login node, before
anything runs. Entry points turn the composed config into a :class:`Config` once
(``OmegaConf.to_object``); ``mip`` works on these objects only.

    python run.py --cfg job             # print the composed config

One module per concern: :mod:`~mip.config.task`, :mod:`~mip.config.model` (the common
model fields and one schema per backend), :mod:`~mip.config.run_config` (run.py's config),
:mod:`~mip.config.tool_config` (filter.py, analyze.py, attribute.py), :mod:`~mip.config.audit_config`
(audit.py) and
:mod:`~mip.config.redact` (configs as plain, redacted containers).
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from mip.config.model import (BudgetSplitConfig, HFModelConfig, MockConfig, MockModelConfig, ModelConfig,
                              OpenAICompatModelConfig, ProviderConfig, SimulatedModelConfig, VLLMModelConfig)
from mip.config.redact import redact, secret_key, to_plain
from mip.config.run_config import (BudgetConfig, Config, LoggerConfig, PathsConfig, PatternConfig, PromptVariantConfig,
                            StrategyConfig)
from mip.config.audit_config import AuditConfig, AuditOptions
from mip.config.task import FilterSpec, PromptSpec, SourceConfig, TaskConfig
from mip.config.tool_config import AnalyzeConfig, AttributeConfig, FilterConfig, WandbSourceConfig, WhereConfig

__all__ = [
    "AnalyzeConfig", "AttributeConfig", "AuditConfig", "AuditOptions", "BudgetConfig", "BudgetSplitConfig", "Config", "FilterConfig", "FilterSpec",
    "HFModelConfig", "LoggerConfig", "MockConfig", "MockModelConfig", "ModelConfig", "OpenAICompatModelConfig",
    "PathsConfig", "PatternConfig", "PromptSpec", "PromptVariantConfig", "ProviderConfig", "SimulatedModelConfig", "SourceConfig",
    "StrategyConfig", "TaskConfig", "VLLMModelConfig", "WandbSourceConfig", "WhereConfig", "redact", "register",
    "secret_key", "to_plain", "load_saved",
]


def register() -> None:
    """Store the schemas and resolvers the YAML files use; call before composing."""
    # `${range:1,51}` → [1, …, 50], for seed lists in presets.
    OmegaConf.register_new_resolver("range", lambda a, b: list(range(int(a), int(b))), replace=True)
    # `${uid:}` → a short random token, the same wherever it appears in one config (cached like
    # Hydra's `${now:}`), so two runs started in the same second get folders of their own.
    OmegaConf.register_new_resolver("uid", lambda: secrets.token_hex(3), use_cache=True, replace=True)
    # `${options:model}` → the options of a config group, for the entry points' --help (conf/hydra/help/).
    OmegaConf.register_new_resolver("options", group_options, replace=True)
    store = ConfigStore.instance()
    store.store(name="config_schema", node=Config)
    store.store(name="analyze_schema", node=AnalyzeConfig)
    store.store(name="attribute_schema", node=AttributeConfig)
    store.store(name="filter_schema", node=FilterConfig)
    store.store(name="audit_schema", node=AuditConfig)
    from mip.models import schemas  # the backends name their schemas; mip.models imports mip.config
    from mip.strategies import schemas as strategy_schemas

    for backend, schema in schemas().items():
        # The registry name is the one place a backend is named: it sets `backend` too.
        store.store(group="model_schema", name=backend, node=schema(backend=backend))
    for strategy, settings in strategy_schemas().items():
        store.store(group="strategy_schema", name=strategy, node=settings(name=strategy))


def group_options(group: str) -> str:
    """The options of a config group as Hydra finds them (files of conf/<group>/ and schemas in
    the ConfigStore), comma-separated; empty outside a Hydra app."""
    from hydra.core.global_hydra import GlobalHydra

    hydra = GlobalHydra.instance()
    return ", ".join(hydra.config_loader().get_group_options(group)) if hydra.is_initialized() else ""


def load_saved(path: str | os.PathLike, schema: type = Config) -> Any:
    """A job's saved ``config.yaml`` (or an audit's) as the typed config it was: its model
    section is checked against its backend's schema, as composition checked it."""
    from mip.models import backend_class
    from mip.strategies import STRATEGIES, strategy_class

    saved = OmegaConf.load(path)
    typed = OmegaConf.structured(schema)
    typed.model = OmegaConf.structured(backend_class(saved.model.backend).schema)
    if "strategy" in saved:  # its settings under its own schema; a job of mip <= 0.3 kept decomposed's on every job
        name = saved.strategy.get("name")
        settings = strategy_class(name).schema if name in STRATEGIES else StrategyConfig
        typed.strategy = OmegaConf.structured(settings)
        saved.strategy = {k: v for k, v in saved.strategy.items() if k in settings.__dataclass_fields__}
    return OmegaConf.to_object(OmegaConf.merge(typed, saved))
