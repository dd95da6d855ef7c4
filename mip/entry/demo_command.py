"""``python -m mip.demo [--conf conf]`` (what ``make run`` runs): the embedded demo of
:mod:`mip.tools.embedded_demo`, its configs composed from ``--conf`` (default: ``conf`` in the folder
you are in, the repository's); results under ``paths.results_dir`` (``$MIP_RESULTS_DIR`` or ``results/``).

Exercised by ``pytest -m slow tests/test_demo.py``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

from mip.entry.config_store import compose_conf
from mip.entry.shipped_tasks import shipped
from mip.tools.embedded_demo import run_demo
from mip.tools.prompt_source import Rebuilder


def compose(conf: Path, config_name: str, *overrides: str) -> Any:
    """A config of the config folder ``conf`` as its entry point composes it, as the schema's dataclass."""
    from omegaconf import OmegaConf

    return OmegaConf.to_object(compose_conf(conf, *overrides, config_name=config_name))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mip.demo", description="The embedded demo that `make run` runs.")
    parser.add_argument("--conf", type=Path, default="conf",
                        help="the repository's config folder (default: conf in the folder you are in)")
    args = parser.parse_args(argv)
    # Before torch loads: OpenMP threads that spin while they wait made two torch threads on a
    # busy two-core machine 5-10x slower than one (benchmarks/RESULTS.md, "The demo"); waiting passively keeps
    # the second core's gain when the machine is idle.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from mip.attribution.weights import AttributionError
    from mip.data import DataError
    from mip.job import StoreError
    from mip.models import BackendSetupError

    configs = functools.partial(compose, args.conf)
    paths = configs("config").paths  # conf/paths/default.yaml
    try:
        run_demo(Path(paths.results_dir).expanduser().resolve(), configs,
                 Rebuilder.maker(paths.cache_dir, shipped(args.conf)))  # report.html's record pages
    except (ValueError, FileNotFoundError, DataError, BackendSetupError, StoreError, AttributionError) as e:
        # each says what to do: one line, no traceback
        sys.exit(f"error: {e}")
