"""What the entry points check and say around a job, kept out of them so they stay thin.

    python run.py +nn=10            # error: unknown config key 'nn' …
    python run.py +experiment=demo  # error: … sweeps pattern=glob(*): add -m …
    python audit.py dta=x.csv       # error: unknown key 'dta' (did you mean audit.data?) …

Exercised by ``pytest tests/test_cli.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import typing
from pathlib import Path
from typing import Any

from mip.entry.schema_fields import close_keys, schema_has


def quiet_library_bars() -> None:
    """Turn off the Hugging Face libraries' own progress bars ("Loading weights", downloads)
    when stderr is not a terminal, so logs and captured output hold no carriage-return
    redraws. Call before transformers is imported: it reads the setting on import."""
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


#: Flags after which run.py runs no sweep (it prints help, a config, or completion).
_NO_RUN = {"--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i", "--shell-completion", "-sc", "--version"}


def say_sweep_starts(args: list[str]) -> None:
    """A sweep's first line, on stdout within a second of the command (only the standard library and
    this module are imported by then): its checks and Hydra's composition of every job's config
    take seconds to minutes before the first job, which were silent."""
    if {"-m", "--multirun"} & set(args) and not _NO_RUN & set(args):
        print("Checking the sweep's settings and composing its jobs before launching them …", flush=True)


def unknown_keys(cfg: Any, schema: type, prefix: str = "") -> list[str]:
    """Keys of a composed config that its dataclass schema does not have.

    Hydra lets ``+key=value`` add a key even to a structured config, so a typo such as
    ``+nn=10`` would otherwise be carried along and ignored.
    """
    hints = _hints(schema)
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


@functools.cache
def _hints(schema: type) -> dict[str, Any]:
    """A schema's field types, resolved once (a sweep checks every job's keys: typing's
    resolution was a tenth of a second a job)."""
    return typing.get_type_hints(schema)


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
    config folder) the values are checked too (:mod:`mip.entry.overrides`): a group's option, a
    value's type, a model key of the chosen model's backend."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    from mip.entry import overrides as values

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
    _refuse_if(_swept_without_m(args, program))


def _swept_without_m(args: list[str], program: str) -> str | None:
    """A value swept (``pattern=a,b``) without ``-m``: Hydra's own message is several lines."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if {"-m", "--multirun"} & set(args):
        return None
    for arg in (a for a in args if "=" in a and not a.startswith(("-", "hydra"))):
        if OverridesParser.create().parse_overrides([arg])[0].is_sweep_override():
            shown = " ".join(a for a in args if not a.startswith("-"))
            return (f"{arg!r} sweeps {arg.split('=', 1)[0].lstrip('+~')} over several values: add -m to run one "
                    f"job per value (`python {program} -m {shown}`), or give one value.")
    return None


#: Hydra's flags that take the next argument as their value (``--cfg job``, ``-cn analyze`` …).
_VALUED_FLAGS = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn", "--config-dir",
                 "-cd", "--info", "-i", "--experimental-rerun"}


def folders_as_results(args: list[str], program: str) -> list[str]:
    """``args`` with bare folders (``python analyze.py results/sweeps/<day>/<time>``) turned
    into the override they stand for, ``results=['<folder>',…]`` (quoted: any path reads
    back as written); Hydra would read a bare path as an override and fail in its lexer.
    A bare word that is no folder, or folders given both ways, is one line and exit 2.

    >>> folders_as_results(["--cfg", "job", "."], "analyze.py")
    ['--cfg', 'job', "results=['.']"]
    """
    bare = [i for i, a in enumerate(args)
            if "=" not in a and not a.startswith("-") and not (i and args[i - 1] in _VALUED_FLAGS)]
    if not bare:
        return args
    missing = [args[i] for i in bare if not os.path.isdir(os.path.expanduser(args[i]))]
    if missing:
        _refuse(f"{missing[0]!r} is no folder: pass a store, a job or a sweep folder (bare, or as "
                f"results=[…]), or key=value settings; `python {program} --help` lists them.")
    if any(a.split("=", 1)[0].lstrip("+") == "results" for a in args):
        _refuse(f"give the folders to read either bare or as results=[…], not both (`python {program} --help`).")
    quoted = ",".join("'" + args[i].replace("\\", "\\\\").replace("'", "\\'") + "'" for i in bare)
    return [a for i, a in enumerate(args) if i not in bare] + [f"results=[{quoted}]"]


def _refuse(problem: str) -> typing.NoReturn:
    from mip.config.redact import mask_text, typed_secrets

    print(f"error: {mask_text(problem, typed_secrets(sys.argv[1:]))}", file=sys.stderr)  # a key typed is not repeated
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
