"""analyze.py's command: the checks before Hydra composes (a sweep folder as ``results``, an
``out_dir`` that holds another analysis refused before Hydra writes there), then the typed
config handed to :func:`mip.analysis.analyze.analyze`, a refusal as one line (exit 2), Ctrl-C
as one line (exit 130), and where the report went. analyze.py itself only declares the Hydra app.

    python analyze.py results=[results/store]

Exercised by ``pytest tests/test_analyze.py tests/test_cli.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from mip.analysis.analyze import analysis_inputs, analyze
from mip.analysis.results import ResultsError
from mip.analysis.slices import SliceError
from mip.config import AnalyzeConfig
from mip.entry.cli import check_overrides, folders_as_results
from mip.entry.reports import check_out_dir, kept
from mip.entry.shipped_tasks import shipped
from mip.tools.prompt_source import Rebuilder

STOPPED = "analyze.py: stopped (Ctrl-C); run it again to write the report."


def run(cfg: DictConfig, conf: Path) -> None:
    """The body of analyze.py's Hydra app; ``conf`` is the config folder (its model and task configs)."""
    config: AnalyzeConfig = OmegaConf.to_object(cfg)
    if config.coverage.model_dir is None:  # what each model's traces are: the model configs shipped here
        config.coverage.model_dir = str(conf / "model")
    try:
        path = analyze(config, show=print, prompts=Rebuilder.maker(config.paths.cache_dir, shipped(conf)))
    except (ResultsError, SliceError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        sys.exit(130)
    print(f"Report: {path}")


def start(main: Callable[[], None], conf: Path) -> None:
    """``python analyze.py …``: the command line checked before Hydra composes, then ``main``."""
    try:
        sys.argv[1:] = folders_as_results(sys.argv[1:], "analyze.py")  # `python analyze.py <sweep folder>`
        check_overrides(sys.argv[1:], AnalyzeConfig, "analyze.py", conf_dir=conf, config_name="analyze")
        # an out_dir holding another analysis is refused before Hydra writes there; any other refusal puts it back
        with kept(check_out_dir(sys.argv[1:], conf, "analyze", analysis_inputs)):
            main()
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        sys.exit(130)
