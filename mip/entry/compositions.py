"""A sweep's jobs composed once each, not twice.

Hydra's basic sweeper composes every job's config to check that it can be composed
(``validate_batch_is_legal``), throws it away, and its launcher composes the same job again
before running it: two compositions a job, two thirds of a planted sweep's launch overhead.
:func:`compose_once` makes the launcher take the config the check composed (Hydra copies the
sweep's resolver cache into both, so they are the same config). Installed by the sweep
callback (:mod:`mip.entry.hydra_callbacks`) on the config loader the sweeper and launcher share.

>>> class Loader:                                   # stands for Hydra's ConfigLoaderImpl
...     def load_sweep_config(self, master_config, sweep_overrides):
...         return {"overrides": sweep_overrides}
>>> loader = Loader(); compose_once(loader)
>>> def validate_batch_is_legal():                  # the sweeper's check
...     return loader.load_sweep_config(None, ["seed=1"])
>>> checked = validate_batch_is_legal()
>>> loader.load_sweep_config(None, ["seed=1"]) is checked, loader.mip_compositions   # the launcher's
(True, {'composed': 1, 'reused': 1})

Each composition also read and parsed every YAML file of ``conf/`` again (a tenth of a
composition): :func:`parse_once` keeps each file's parsed text for the process, keyed by its
modification time and size, and builds the config from it afresh each time.

Exercised by ``pytest tests/test_launch_checks.py``; measured by ``benchmarks/launch.py``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

#: Compositions kept between the check and the launch, at most (a batch of more jobs composes the rest twice).
KEPT = 1024


def compose_once(loader: Any, limit: int = KEPT) -> None:
    """Wrap ``loader.load_sweep_config`` (Hydra's ConfigLoaderImpl): a composition asked for by
    the sweeper's check is kept, and the launcher's request for the same job gets it. Counts
    in ``loader.mip_compositions`` (composed, reused)."""
    if getattr(loader, "mip_compositions", None) is not None:
        return
    original = loader.load_sweep_config
    kept: dict[tuple[int, tuple[str, ...]], Any] = {}
    counts = loader.mip_compositions = {"composed": 0, "reused": 0}

    def load_sweep_config(master_config: Any, sweep_overrides: list[str]) -> Any:
        key = (id(master_config), tuple(sweep_overrides))
        checking = sys._getframe(1).f_code.co_name == "validate_batch_is_legal"
        if not checking and key in kept:  # the launcher: the check's composition, used once
            counts["reused"] += 1
            return kept.pop(key)
        config = original(master_config, sweep_overrides)
        counts["composed"] += 1
        if checking and len(kept) < limit:
            kept[key] = config
        return config

    loader.load_sweep_config = load_sweep_config


_PARSED: dict[tuple[str, int, int], tuple[dict, Any]] = {}


def parse_once() -> None:
    """Make Hydra's file config source parse each YAML file once per process (see the module
    doc); the config it returns is built from the parsed data each time, so no composition
    sees another's changes. A file changed on disk is read again."""
    from hydra._internal.core_plugins.file_config_source import FileConfigSource
    from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
    from omegaconf import OmegaConf
    from omegaconf._utils import get_yaml_loader

    if getattr(FileConfigSource, "mip_parse_once", False):
        return
    import yaml

    def load_config(self: Any, config_path: str) -> ConfigResult:
        full_path = os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path)))
        try:
            stat = os.stat(full_path)
        except OSError:
            raise ConfigLoadError(f"Config not found : {full_path}") from None
        key = (full_path, stat.st_mtime_ns, stat.st_size)
        if key not in _PARSED:
            with open(full_path, encoding="utf-8") as f:
                text = f.read()
            _PARSED[key] = (ConfigSource._get_header_dict(text[:512]), yaml.load(text, Loader=get_yaml_loader()))
        header, data = _PARSED[key]
        return ConfigResult(config=OmegaConf.create(data if data is not None else {}),
                            path=f"{self.scheme()}://{self.path}", provider=self.provider, header=dict(header))

    FileConfigSource.load_config = load_config
    FileConfigSource.mip_parse_once = True
