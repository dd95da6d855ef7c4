"""The schemas and resolvers Hydra composes with, and a saved config read back as typed.

They sit above :mod:`mip.config`, :mod:`mip.models` and :mod:`mip.strategies` because each
backend and each strategy names its own schema: the config package itself imports neither.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf, open_dict

from mip.config import AnalyzeConfig, AttributeConfig, AuditConfig, Config, FilterConfig, StrategyConfig
from mip.analysis import out_dirs
from mip.models import backend_class, schemas
from mip.strategies import STRATEGIES, strategy_class
from mip.strategies import schemas as strategy_schemas


def register() -> None:
    """Store the schemas and resolvers the YAML files use; call before composing."""
    # `${range:1,51}` → [1, …, 50], for seed lists in presets.
    OmegaConf.register_new_resolver("range", lambda a, b: list(range(int(a), int(b))), replace=True)
    # `${uid:}` → a short random token, the same wherever it appears in one config (cached like
    # Hydra's `${now:}`), so two runs started in the same second get folders of their own.
    OmegaConf.register_new_resolver("uid", lambda: secrets.token_hex(3), use_cache=True, replace=True)
    # `${options:model}` → the options of a config group, for the entry points' --help (conf/hydra/help/).
    OmegaConf.register_new_resolver("options", group_options, replace=True)
    # `${out_dir:${results},${paths.results_dir},report}` → beside the folders read (mip.analysis.out_dirs).
    OmegaConf.register_new_resolver("out_dir", out_dirs.out_dir, replace=True)
    store = ConfigStore.instance()
    store.store(name="config_schema", node=Config)
    store.store(name="analyze_schema", node=AnalyzeConfig)
    store.store(name="attribute_schema", node=AttributeConfig)
    store.store(name="filter_schema", node=FilterConfig)
    store.store(name="audit_schema", node=AuditConfig)
    for backend, schema in schemas().items():
        # The registry name is the one place a backend is named: it sets `backend` too.
        store.store(group="model_schema", name=backend, node=schema(backend=backend))
    for strategy, settings in strategy_schemas().items():
        store.store(group="strategy_schema", name=strategy, node=settings(name=strategy))


def load_saved(path: str | os.PathLike, schema: type = Config) -> Any:
    """A job's saved ``config.yaml`` (or an audit's) as the typed config it was: its model
    section is checked against its backend's schema, as composition checked it."""
    saved = OmegaConf.load(path)
    typed = OmegaConf.structured(schema)
    typed.model = OmegaConf.structured(backend_class(saved.model.backend).schema)
    if "strategy" in saved:  # its settings under its own schema; a job of mip <= 0.3 kept decomposed's on every job
        name = saved.strategy.get("name")
        settings = strategy_class(name).schema if name in STRATEGIES else StrategyConfig
        typed.strategy = OmegaConf.structured(settings)
        saved.strategy = {k: v for k, v in saved.strategy.items() if k in settings.__dataclass_fields__}
    return OmegaConf.to_object(OmegaConf.merge(typed, saved))


def compose_conf(conf_dir: str | os.PathLike, *overrides: str, config_name: str = "config") -> Any:
    """The primary config of the config folder ``conf_dir`` (the repository's ``conf/``, which
    the caller names: the package never looks for it) composed with ``overrides``, as run.py
    composes it (its ``task_source`` the folders it was composed from: :func:`with_task_source`), or with
    ``config_name``, as analyze.py or attribute.py composes theirs (a DictConfig)."""
    from hydra import compose, initialize_config_dir

    folder = os.path.abspath(os.path.expanduser(conf_dir))
    if not os.path.isfile(os.path.join(folder, "config.yaml")):
        raise FileNotFoundError(f"No config folder at {folder} (it holds config.yaml); run from the repository "
                                "folder or pass --conf <repository>/conf.")
    register()
    # Inside a Hydra app (analyze.py's @hydra.main) Hydra is initialized already: compose beside it
    # and put it back after.
    from hydra.core.global_hydra import GlobalHydra

    outer = GlobalHydra.instance().hydra if GlobalHydra.instance().is_initialized() else None
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=folder, version_base="1.3"):
            return composed(compose(config_name, overrides=list(overrides), return_hydra_config=True))
    finally:
        if outer is not None:
            GlobalHydra.instance().clear()
            GlobalHydra.instance().initialize(outer)


def composed(cfg: Any) -> Any:
    """A config composed with its ``hydra`` node (``return_hydra_config=True``), less that node, its
    ``task_source`` set from the node's config sources (:func:`with_task_source`)."""
    sources = list(cfg.hydra.runtime.config_sources)
    with open_dict(cfg):
        del cfg["hydra"]
    return with_task_source(cfg, sources)


def with_task_source(config: Any, sources: Iterable[Any]) -> Any:
    """``config`` (typed or a DictConfig) with its ``task_source``, where its schema has one and it
    is unset, the config folders among Hydra's config ``sources`` (``hydra.runtime.config_sources``:
    the primary folder, ``--config-dir``'s and ``hydra.searchpath``'s), whose task files are the
    shipped ones its records' task changes are read against (:mod:`mip.job.task_changes`).

    >>> from types import SimpleNamespace as S
    >>> from mip.config import Config
    >>> sources = [S(schema="pkg", path="hydra.conf"), S(schema="file", path="/repo/conf")]
    >>> with_task_source(Config(), sources).task_source
    ['/repo/conf']
    >>> with_task_source(Config(task_source=["/mine"]), sources).task_source   # named already: kept
    ['/mine']
    """
    if getattr(config, "task_source", None) is not None and not config.task_source:
        config.task_source = [os.path.abspath(s.path) for s in sources if s.schema in ("file", "parsed-file")]
    return config


def group_options(group: str) -> str:
    """The options of a config group as Hydra finds them (files of conf/<group>/ and schemas in
    the ConfigStore), comma-separated; empty outside a Hydra app. Asked once per group and
    config loader: --help's template names them, and Hydra resolves it on every composition
    (a sweep composes each job twice), and each look builds a config repository anew."""
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
