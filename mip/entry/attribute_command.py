"""attribute.py's command: the checks before Hydra composes, then the typed config handed to
:func:`mip.attribution.replay.attribute`, a refusal as one line (exit 2), and where the tables
went. attribute.py itself only declares the Hydra app.

    python attribute.py model=smollm2_135m task=arith results=[results/store]

Exercised by ``pytest tests/test_attribution.py tests/test_cli.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from mip.attribution.replay import AttributionError, attribute, attribution_inputs
from mip.config import AttributeConfig
from mip.data import DataError
from mip.entry.cli import check_overrides, folders_as_results
from mip.entry.reports import check_out_dir, kept


def run(cfg: DictConfig) -> None:
    """The body of attribute.py's Hydra app."""
    config: AttributeConfig = OmegaConf.to_object(cfg)
    try:
        out = attribute(config)
    except (AttributionError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"Attribution: {out}")


def start(main: Callable[[], None], conf: Path) -> None:
    """``python attribute.py …``: the command line checked before Hydra composes, then ``main``."""
    sys.argv[1:] = folders_as_results(sys.argv[1:], "attribute.py")  # `python attribute.py <sweep folder>`
    check_overrides(sys.argv[1:], AttributeConfig, "attribute.py", conf_dir=conf, config_name="attribute")
    # an out_dir holding another analysis is refused before Hydra writes there; any other refusal puts it back
    with kept(check_out_dir(sys.argv[1:], conf, "attribute", attribution_inputs)):
        main()
