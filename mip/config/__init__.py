"""Structured config: the dataclass schemas that the YAML files under ``conf/`` extend.

They are registered in Hydra's ConfigStore by :func:`mip.entry.config_store.register` (``config_schema``, the
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

from mip.config.model import (BudgetSplitConfig, HFModelConfig, MockConfig, MockModelConfig, ModelConfig,
                              OpenAICompatModelConfig, ProviderConfig, SimulatedModelConfig, VLLMModelConfig)
from mip.config.redact import redact, secret_key, to_plain
from mip.config.run_config import (BudgetConfig, Config, LoggerConfig, PathsConfig, PatternConfig, PromptVariantConfig,
                                   StrategyConfig)
from mip.config.audit_config import AuditConfig, AuditOptions
from mip.config.task import FilterSpec, PromptSpec, SourceConfig, TaskConfig
from mip.config.tool_config import AnalyzeConfig, AttributeConfig, FilterConfig, WandbSourceConfig, WhereConfig

__all__ = [
    "AnalyzeConfig", "AttributeConfig", "AuditConfig", "AuditOptions", "BudgetConfig", "BudgetSplitConfig", "Config",
    "FilterConfig", "FilterSpec",
    "HFModelConfig", "LoggerConfig", "MockConfig", "MockModelConfig", "ModelConfig", "OpenAICompatModelConfig",
    "PathsConfig", "PatternConfig", "PromptSpec", "PromptVariantConfig", "ProviderConfig", "SimulatedModelConfig",
    "SourceConfig",
    "StrategyConfig", "TaskConfig", "VLLMModelConfig", "WandbSourceConfig", "WhereConfig", "redact",
    "secret_key", "to_plain",
]


def group_options(group: str) -> str:
    """The options of a config group as Hydra finds them (files of conf/<group>/ and schemas in
    the ConfigStore), comma-separated; empty outside a Hydra app. Asked once per group and
    config loader: --help's template names them, and Hydra resolves it on every composition
    (a sweep composes each job twice), where each look builds a config repository anew —
    most of a planted sweep's launch time before this cache."""
    from hydra.core.global_hydra import GlobalHydra

    hydra = GlobalHydra.instance()
    if not hydra.is_initialized():
        return ""
    loader = hydra.config_loader()
    known = _OPTIONS.get(id(loader))
    if known is None or known[0] is not loader:  # another app (a test's compose) made another loader
        known = _OPTIONS[id(loader)] = (loader, {})
        while len(_OPTIONS) > 8:  # a process composing many apps keeps the last few
            _OPTIONS.pop(next(iter(_OPTIONS)))
    if group not in known[1]:
        known[1][group] = ", ".join(loader.get_group_options(group))
    return known[1][group]


#: The options found per config group, by config loader (see :func:`group_options`).
_OPTIONS: dict[int, tuple[object, dict[str, str]]] = {}
