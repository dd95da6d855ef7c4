"""The values of command-line overrides, checked before Hydra composes: a config group's
option must be a file of its folder, a value must fit its key's type, a model key must be
one its backend's schema has. Hydra's own messages for these run to 15-27 lines (or, for
``task=../task/arith``, resolve a path outside the group and run it); these are one line.

    python run.py task=../task/arith     # error: unknown task '../task/arith'; choose one of …
    python run.py n=abc                  # error: n=abc: n takes a whole number.

Exercised by ``pytest tests/test_refusals.py``.

>>> from mip.config import OpenAICompatModelConfig
>>> leaf_type(OpenAICompatModelConfig, "max_concurrency"), leaf_type(OpenAICompatModelConfig, "extra_body.seed")
(<class 'int'>, None)
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

KINDS = {int: "a whole number", float: "a number", bool: "true or false", str: "a word or quoted text"}


def values(override: Any) -> list[Any]:
    """The values an override gives its key (each of a sweep's; none for ``glob(…)`` or a deletion)."""
    if override.value_type is None or override.value_type.name == "GLOB_CHOICE_SWEEP":
        return []
    return list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]


def options(conf_dir: Path, group: str) -> list[str]:
    return sorted(f.stem for f in (conf_dir / group).glob("*.yaml"))


def group_error(conf_dir: Path, group: str, override: Any) -> str | None:
    """An option that is no file of ``conf/<group>/`` (a typo, a path such as ``../../etc``)."""
    known = options(conf_dir, group)
    for value in values(override):
        if value is not None and str(value) not in known:  # null: Hydra's "no option"
            guess = close_option(str(value), known)
            return (f"unknown {group} {str(value)!r}" + (f" (did you mean {guess[0]}?)" if guess else "")
                    + f"; choose one of {', '.join(known)} (the files of conf/{group}/).")
    return None


def close_option(value: str, known: list[str]) -> list[str]:
    """The option ``value`` was likely meant as: the same up to case (``NER``: ``ner``), else the closest.

    >>> close_option("NER", ["arith", "ner", "sentiment"]), close_option("sentimnt", ["ner", "sentiment"])
    (['ner'], ['sentiment'])
    """
    same = [k for k in known if k.lower() == value.lower()]
    if same:
        return same[:1]
    lowered = {k.lower(): k for k in known}
    return [lowered[g] for g in difflib.get_close_matches(value.lower(), list(lowered), n=1)]


def config_groups(conf_dir: Path, config_name: str) -> dict[str, str]:
    """The config groups an entry point's primary config composes, each with its default option."""
    found = {}
    for entry in OmegaConf.to_container(OmegaConf.load(conf_dir / f"{config_name}.yaml")).get("defaults", []):
        for key, value in entry.items() if isinstance(entry, dict) else []:
            group = key.removeprefix("optional ")
            if not group.startswith(("override ", "hydra/")) and (conf_dir / group).is_dir():
                found[group] = value
    return found


def _option_registries() -> dict[str, Any]:
    """The config groups whose options extend their field's schema: each option file names its
    own (``- /model_schema/<backend>@_here_``, ``- /strategy_schema/<name>@_here_``), stored by
    mip.entry.config_store from these registries."""
    from mip.models import schemas as model_schemas
    from mip.strategies import schemas as strategy_schemas

    return {"model": model_schemas, "strategy": strategy_schemas}


OPTION_SCHEMA_GROUPS = ("model", "strategy")


def chosen_options(conf_dir: Path, group: str, args: list[str], default: str | None) -> list[str]:
    """The options of ``group`` a command's jobs compose: those it names (each of a sweep's, a
    glob's matches), else the one a preset it adds sets (``+experiment=demo``:
    ``override /model: …``), else the primary config's default."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for arg in args:
        if arg.split("=", 1)[0].lstrip("+") == group:
            override = parser.parse_overrides([arg])[0]
            if override.value_type is not None and override.value_type.name == "GLOB_CHOICE_SWEEP":
                return override.value().filter(options(conf_dir, group))
            return [str(v) for v in values(override)]
    for arg in args:
        key, _, name = arg.partition("=")
        preset = conf_dir / key.lstrip("+") / f"{name}.yaml"
        if key.startswith("+") and "/" not in name and preset.is_file():
            for entry in OmegaConf.to_container(OmegaConf.load(preset)).get("defaults", []):
                if isinstance(entry, dict) and f"override /{group}" in entry:
                    return [str(entry[f"override /{group}"])]
    return [default] if default else []


def option_schema(conf_dir: Path, group: str, name: str) -> tuple[str, type] | None:
    """The schema an option of ``group`` (model, strategy) composes with, and the name it is
    registered by (a model's backend, a strategy's name): the file's ``/<group>_schema/<name>@_here_``."""
    path = conf_dir / group / f"{name}.yaml"
    if group not in OPTION_SCHEMA_GROUPS or not path.is_file():
        return None
    for entry in OmegaConf.to_container(OmegaConf.load(path)).get("defaults", []):
        if isinstance(entry, str) and entry.lstrip("/").startswith(f"{group}_schema/"):
            kind = entry.lstrip("/").split("/", 1)[1].split("@")[0]
            found = _option_registries()[group]()
            return (kind, found[kind]) if kind in found else None
    return None


def leaf_type(schema: type, key: str) -> Any:
    """The type of a dotted key reached through dataclass fields only (None through a dict or
    a free-form value, whose keys Hydra checks)."""
    hint: Any = schema
    for part in key.split("."):
        if not dataclasses.is_dataclass(hint):
            return None
        hint = typing.get_type_hints(hint).get(part)
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if typing.get_origin(hint) is typing.Union and len(args) == 1:
            hint = args[0]
    return hint


def _kind(hint: Any) -> str:
    if typing.get_origin(hint) is list:
        inner = (typing.get_args(hint) or (str,))[0]
        return "a list, e.g. [0,1,2]" if inner in (int, float) else "a list, e.g. [a,b]"
    return KINDS.get(hint, "a value of its type")


def value_error(schema: type, key: str, override: Any, shown: str | None = None) -> str | None:
    """A value that the type of ``key`` in ``schema`` cannot take (``n=abc``); ``shown``: the key
    as the command line spells it."""
    shown = shown or key
    hint = leaf_type(schema, key)
    if hint is None or hint is Any or dataclasses.is_dataclass(hint):
        return None
    holder = OmegaConf.structured(dataclasses.make_dataclass("Value", [("v", typing.Optional[hint], None)]))
    for value in values(override):
        try:
            holder.v = value
        except OmegaConfBaseException:
            return f"{shown}={value}: {shown} takes {_kind(hint)}."
    return None


def option_key_error(conf_dir: Path, group: str, chosen: list[str], key: str, override: Any) -> str | None:
    """A ``<group>.<key>`` (``model.max_concurrency``, ``strategy.batch_size``) that the schema of
    an option the command chose lacks, or a value it cannot take; where another option of
    the group has the key, says which to choose (``strategy.max_reasks`` → ``strategy=decomposed``)."""
    from mip.entry.schema_fields import close_keys, schema_has

    field = key.split(".", 1)[1]
    what = {"model": "backend"}.get(group, group)
    for name in chosen:
        found = option_schema(conf_dir, group, name)
        if found is None:
            continue
        kind, schema = found
        if not schema_has(schema, field):
            where = f"{group} {name}" + (f" ({what} {kind})" if kind != name else "")
            return _missing_key(conf_dir, group, name, where, key, field, close_keys(field, schema))
        error = value_error(schema, field, override, shown=key)
        if error:
            return error
    return None


def _missing_key(conf_dir: Path, group: str, name: str, label: str, key: str, field: str, guess: list[str]) -> str:
    from mip.entry.schema_fields import schema_has

    bringing = [o for o in options(conf_dir, group)
                if (found := option_schema(conf_dir, group, o)) and schema_has(found[1], field)]
    if bringing and group == "strategy":  # a strategy's own setting: its option brings it
        return (f"{key} is a setting of {group} {' or '.join(bringing)}, not of {label}; add "
                f"{group}={bringing[0]} (`python run.py {group}={bringing[0]} --cfg job` lists its keys).")
    return (f"{label} has no key {field!r}" + (f" (did you mean {group}.{guess[0]}?)" if guess else "")
            + f"; `python run.py {group}={name} --cfg job` lists its keys.")
