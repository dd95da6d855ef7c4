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

