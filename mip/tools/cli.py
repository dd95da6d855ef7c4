"""What the entry points check and say around a job, kept out of them so they stay thin.

    python run.py +nn=10            # error: unknown config key 'nn' …
    python run.py +experiment=demo  # error: … sweeps pattern=glob(*): add -m …
    python audit.py dta=x.csv       # error: unknown key 'dta' (did you mean audit.data?) …

Exercised by ``pytest tests/test_cli.py``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import typing
from pathlib import Path
from typing import Any

from mip.tools.schema_fields import close_keys, schema_has


def quiet_library_bars() -> None:
    """Turn off the Hugging Face libraries' own progress bars ("Loading weights", downloads)
    when stderr is not a terminal, so logs and captured output hold no carriage-return
    redraws. Call before transformers is imported: it reads the setting on import."""
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def unknown_keys(cfg: Any, schema: type, prefix: str = "") -> list[str]:
    """Keys of a composed config that its dataclass schema does not have.

    Hydra lets ``+key=value`` add a key even to a structured config, so a typo such as
    ``+nn=10`` would otherwise be carried along and ignored.
    """
    hints = typing.get_type_hints(schema)
    found = []
    for key in cfg.keys():
        name = f"{prefix}{key}"
        if key not in hints:
            found.append(name)
            continue
        hint, value = _node_type(cfg[key], hints[key]), cfg[key]
        if dataclasses.is_dataclass(hint) and hasattr(value, "keys"):
            found += unknown_keys(value, hint, f"{name}.")
        elif typing.get_origin(hint) is dict and hasattr(value, "keys"):
            inner = typing.get_args(hint)[1]
            if dataclasses.is_dataclass(inner):
                for k in value.keys():
                    found += unknown_keys(value[k], inner, f"{name}.{k}.")
    return found


def _node_type(value: Any, hint: Any) -> Any:
    """The schema a node was composed with where it extends its field's type (a model config
    is typed by its backend's schema, a subclass of the field's ModelConfig)."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(hint, type) and isinstance(value, DictConfig):
        actual = OmegaConf.get_type(value)
        if isinstance(actual, type) and issubclass(actual, hint):
            return actual
    return hint


def check_keys(cfg: Any, schema: type, program: str = "run.py") -> None:
    """Exit with a one-line error naming any key the schema does not know."""
    extra = unknown_keys(cfg, schema)
    if extra:
        print(f"error: unknown config key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}; "
              f"check the spelling (`python {program} --cfg job` lists every key) and drop the leading '+'.",
              file=sys.stderr)
        sys.exit(2)


def check_overrides(args: list[str], schema: type, program: str, refused: dict[str, str] | None = None,
                    groups: tuple[str, ...] = (), conf_dir: str | os.PathLike | None = None,
                    config_name: str = "config") -> None:
    """Exit with a one-line error for a command-line override whose key ``schema`` lacks, or
    whose first part ``refused`` names (with what to write instead). Called before Hydra
    composes: its own message for a typo runs over several lines and suggests ``+key=…``,
    which only adds the typo to the config. ``groups``: config groups that are no field
    (``+experiment=core``), which Hydra checks itself. With ``conf_dir`` (the entry point's
    config folder) the values are checked too (:mod:`mip.tools.overrides`): a group's option, a
    value's type, a model key of the chosen model's backend."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    from mip.tools import overrides as values

    # Options from another search path (hydra.searchpath=…) are Hydra's to find.
    conf = Path(conf_dir) if conf_dir and not any(a.startswith("hydra.searchpath") for a in args) else None
    own = values.config_groups(conf, config_name) if conf else {}
    for arg in args:
        if arg.startswith("-") or "=" not in arg:  # Hydra's flags (--help, -m, --cfg job)
            continue
        try:
            override = OverridesParser.create().parse_overrides([arg])[0]
        except OverrideParseException as e:
            _refuse(f"cannot read {arg!r} ({str(e).splitlines()[0]}); quote it for the shell as written in "
                    f"`python {program} --help`, e.g. 'pattern=glob(*)'.")
        key = arg.split("=", 1)[0].lstrip("+~").split("@", 1)[0]
        top = key.split(".", 1)[0]
        if key in own or (conf and key in groups):
            _refuse_if(values.group_error(conf, key, override))
            continue
        if key.startswith("hydra") or "/" in key or top in groups:  # Hydra's own settings and groups
            continue
        if refused and top in refused:
            _refuse(f"{key!r} cannot be overridden here: {refused[top]}.")
        if not schema_has(schema, key):
            guess = close_keys(key, schema)
            _refuse(f"unknown key {key!r}" + (f" (did you mean {' or '.join(guess)}?)" if guess else "")
                    + f"; `python {program} --help` lists the options.")
        if conf and top in values.OPTION_SCHEMA_GROUPS and top in own and "." in key:
            chosen = values.chosen_options(conf, top, args, own[top])
            _refuse_if(values.option_key_error(conf, top, chosen, key, override))
        elif conf:
            _refuse_if(values.value_error(schema, key, override))


def _refuse(problem: str) -> typing.NoReturn:
    print(f"error: {problem}", file=sys.stderr)
    sys.exit(2)


def _refuse_if(problem: str | None) -> None:
    if problem:
        _refuse(problem)


def check_sweep_preset(hydra_cfg: Any) -> None:
    """A preset that sweeps (``+experiment=demo``, ``core``, …) needs ``-m``; without it Hydra
    would run only the first value of each swept setting."""
    from hydra.types import RunMode

    params = hydra_cfg.sweeper.get("params") if hasattr(hydra_cfg.sweeper, "get") else None
    if hydra_cfg.mode == RunMode.RUN and params:
        swept = " ".join(f"{k}={v}" for k, v in params.items())
        command = " ".join(["python run.py -m", *hydra_cfg.overrides.task])
        print(f"error: this preset sweeps {swept}; add -m to run every job: {command}", file=sys.stderr)
        sys.exit(2)


NEXT_STEPS = """Next:
  python -m mip.show {output_dir}
      the prompt, every output and the verdict of this job's records
  python run.py -m +experiment=demo
      all seven order patterns on the embedded model (14 experiments, a few minutes)
  python run.py -m +experiment=core model=gpt_oss_120b data_dir=../shared/data/raw dry_run=true
      count the paper's core grid for an API model, its prompt tokens and cost; calls nothing
  python run.py -m +experiment=core model=qwen36_35b data_dir=../shared/data/raw hydra/launcher=slurm_gpu
      run the paper's core grid (README, "Running the paper's grid")"""


def compose_conf(conf_dir: str | os.PathLike, *overrides: str, config_name: str = "config") -> Any:
    """The primary config of the config folder ``conf_dir`` (the repository's ``conf/``, which
    the caller names: the package never looks for it) composed with ``overrides``, as run.py
    composes it, or with
    ``config_name``, as analyze.py or attribute.py composes theirs (a DictConfig)."""
    from hydra import compose, initialize_config_dir

    from mip.tools.config_store import register

    folder = os.path.abspath(os.path.expanduser(conf_dir))
    if not os.path.isfile(os.path.join(folder, "config.yaml")):
        raise FileNotFoundError(f"No config folder at {folder} (it holds config.yaml); run from the repository "
                                "folder or pass --conf <repository>/conf.")
    register()
    with initialize_config_dir(config_dir=folder, version_base="1.3"):
        return compose(config_name, overrides=list(overrides))
