"""Each YAML file of ``conf/`` parsed once a process, through Hydra's public plugin API.

A sweep composes every job from the same few dozen files, and Hydra's file source reads and
parses each again on every composition (pure-Python YAML: about a twentieth of a composition).
:class:`ParsedOnceSource` is a Hydra ``ConfigSource`` (scheme ``parsed-file``) that keeps each
file's parse for the process, keyed by its path, modification time and size, and builds the
config from it afresh each time, so no composition sees another's changes; a file changed on
disk is read again. :class:`ParsedOnceSearchPath` (a ``SearchPathPlugin``) points Hydra's
folders of config files (``file://`` entries, or a folder without a scheme) at it.
Hydra finds both in ``hydra_plugins/mip_sweeper.py``.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> _ = open(f"{folder}/config.yaml", "w").write("a: 1\\nb: [x]\\n")
>>> source = ParsedOnceSource("main", f"parsed-file://{folder}")
>>> first = source.load_config("config").config
>>> first.b.append("y")
>>> source.load_config("config").config.b        # built afresh from the one parse
['x']

Exercised by ``pytest tests/test_launch_checks.py``; measured by ``benchmarks/launch.py``.
"""

from __future__ import annotations

import os
from typing import Any

from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin

_PARSED: dict[tuple[str, int, int], tuple[dict, Any]] = {}


class ParsedOnceSource(ConfigSource):
    """Hydra's file config source, each file parsed once a process."""

    @staticmethod
    def scheme() -> str:
        return "parsed-file"

    def load_config(self, config_path: str) -> ConfigResult:
        from omegaconf import OmegaConf

        full_path = os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path)))
        try:
            stat = os.stat(full_path)
        except OSError:
            raise ConfigLoadError(f"Config not found : {full_path}") from None
        key = (full_path, stat.st_mtime_ns, stat.st_size)
        if key not in _PARSED:
            with open(full_path, encoding="utf-8") as f:  # as Hydra's file source reads it: header, then OmegaConf
                header = ConfigSource._get_header_dict(f.read(512))
                f.seek(0)
                _PARSED[key] = (header, OmegaConf.to_container(OmegaConf.load(f)))
        header, data = _PARSED[key]
        return ConfigResult(config=OmegaConf.create(data if data is not None else {}),
                            path=f"{self.scheme()}://{self.path}", provider=self.provider, header=dict(header))

    def available(self) -> bool:
        return self.is_group("")

    def is_group(self, config_path: str) -> bool:
        return os.path.isdir(os.path.realpath(os.path.join(self.path, config_path)))

    def is_config(self, config_path: str) -> bool:
        return os.path.isfile(os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path))))

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        files: list[str] = []
        for name in os.listdir(os.path.realpath(os.path.join(self.path, config_path))):
            self._list_add_result(files=files, file_path=os.path.join(config_path, name), file_name=name,
                                  results_filter=results_filter)
        return sorted(set(files))


class ParsedOnceSearchPath(SearchPathPlugin):
    """Hydra's folders of config files read through :class:`ParsedOnceSource`."""

    def manipulate_search_path(self, search_path: Any) -> None:
        for element in search_path.get_path():
            if (element.path and "://" not in element.path) or element.path.startswith("file://"):  # a folder
                element.path = f"{ParsedOnceSource.scheme()}://{element.path.removeprefix('file://')}"
