"""What the entry points check and say around a job, kept out of them so they stay thin.

    python run.py +nn=10            # error: unknown config key 'nn' …
    python run.py +experiment=demo  # error: … sweeps pattern=glob(*): add -m …

Exercised by ``pytest tests/test_cli.py``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import typing
from typing import Any


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
        hint, value = hints[key], cfg[key]
        if dataclasses.is_dataclass(hint) and hasattr(value, "keys"):
            found += unknown_keys(value, hint, f"{name}.")
        elif typing.get_origin(hint) is dict and hasattr(value, "keys"):
            inner = typing.get_args(hint)[1]
            if dataclasses.is_dataclass(inner):
                for k in value.keys():
                    found += unknown_keys(value[k], inner, f"{name}.{k}.")
    return found


def check_keys(cfg: Any, schema: type) -> None:
    """Exit with a one-line error naming any key the schema does not know."""
    extra = unknown_keys(cfg, schema)
    if extra:
        print(f"error: unknown config key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}; "
              "check the spelling (`python run.py --cfg job` lists every key) and drop the leading '+'.", file=sys.stderr)
        sys.exit(2)


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
  python run.py -m +experiment=core model=qwen36_35b hydra/launcher=slurm_gpu
      run the paper's core grid (README: "Running the paper's experiments")"""


REPO_CONF = __import__("pathlib").Path(__file__).resolve().parents[1] / "conf"


def compose_repo(*overrides: str, config_name: str = "config") -> Any:
    """The repository's ``conf/`` composed with ``overrides``, as run.py (or, with
    ``config_name``, analyze.py or attribute.py) composes it (a DictConfig)."""
    from hydra import compose, initialize_config_dir

    from mip.config import register

    register()
    with initialize_config_dir(config_dir=str(REPO_CONF), version_base="1.3"):
        return compose(config_name, overrides=list(overrides))
