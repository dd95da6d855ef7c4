"""A sweep's jobs: split as Hydra's basic sweeper splits them, and composed once each.

:func:`split_jobs` turns a sweep's overrides into its jobs' override lists (the cartesian
product of the swept values, ``glob(*)`` and ``range`` included), batched. Hydra's sweeper
composes every job to check that it can be composed before any is launched, and its launcher
composed each again: :class:`ComposedOnce` stands in for the config loader the launcher is
given (Hydra's public ``ConfigLoader`` interface), so the launcher runs the composition the
sweeper checked. mip's sweeper (``hydra_plugins/mip_sweeper.py``, ``hydra/sweeper=mip``) uses both.

>>> from hydra.core.override_parser.overrides_parser import OverridesParser
>>> overrides = OverridesParser.create().parse_overrides(["pattern=a,b", "seed=0,1", "n=5"])
>>> for batch in split_jobs(overrides, max_batch_size=3):   # batches of at most 3 jobs
...     print(batch)
[['pattern=a', 'seed=0', 'n=5'], ['pattern=a', 'seed=1', 'n=5'], ['pattern=b', 'seed=0', 'n=5']]
[['pattern=b', 'seed=1', 'n=5']]

>>> class Loader:                                   # stands for Hydra's own config loader
...     def load_sweep_config(self, master_config, sweep_overrides):
...         return {"overrides": sweep_overrides}
>>> once = ComposedOnce(Loader())
>>> checked = once.compose(None, ["seed=1"])       # the sweeper's check
>>> once.load_sweep_config(None, ["seed=1"]) is checked, once.counts   # the launcher's
(True, {'composed': 1, 'reused': 1})

Measured by ``benchmarks/launch.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hydra.core.config_loader import ConfigLoader
from hydra.core.override_parser.types import Override

#: Compositions kept between the check and the launch, at most (a batch of more jobs composes the rest twice).
KEPT = 1024


def split_jobs(overrides: list[Override], max_batch_size: int | None = None) -> list[list[list[str]]]:
    """The jobs' override lists, in batches of ``max_batch_size`` (one batch when None): one job
    per combination of the swept values, each key in the order it was first given, a key given
    twice taking its last value (as Hydra's basic sweeper splits them)."""
    lists: dict[str, list[str]] = {}
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            lists[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            lists[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise ValueError(f"{override.input_line}: a sweep takes a list, range or glob of values, "
                             f"not a {override.value_type.name if override.value_type else 'value'} sweep.")
    jobs = [list(job) for job in itertools.product(*lists.values())]
    size = max_batch_size if max_batch_size and max_batch_size > 0 else len(jobs) or 1
    return [jobs[i:i + size] for i in range(0, len(jobs), size)] or [[]]


class ComposedOnce(ConfigLoader):
    """Hydra's config loader, whose :meth:`load_sweep_config` hands out a job's composition
    that :meth:`compose` made for the sweeper's check, once, instead of composing it again.
    Everything else is the wrapped loader's. ``keep``: whether to keep compositions at all
    (False where the launcher composes each job in another process). Counts in ``counts``."""

    def __init__(self, loader: Any, keep: bool = True, limit: int = KEPT):
        self.loader, self.keep, self.limit = loader, keep, limit
        self.kept: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.counts = {"composed": 0, "reused": 0}

    def compose(self, master_config: Any, sweep_overrides: Sequence[str]) -> Any:
        """Compose a job for the check, and keep it for the launcher."""
        config = self._compose(master_config, sweep_overrides)
        if self.keep and len(self.kept) < self.limit:
            self.kept[(id(master_config), tuple(sweep_overrides))] = config
        return config

    def load_sweep_config(self, master_config: Any, sweep_overrides: list[str]) -> Any:
        kept = self.kept.pop((id(master_config), tuple(sweep_overrides)), None)
        if kept is not None:
            self.counts["reused"] += 1
            return kept
        return self._compose(master_config, sweep_overrides)

    def _compose(self, master_config: Any, sweep_overrides: Sequence[str]) -> Any:
        self.counts["composed"] += 1
        return self.loader.load_sweep_config(master_config, list(sweep_overrides))

    def __getstate__(self) -> dict:
        """A launcher that pickles itself (submitit) carries the loader, not the kept configs."""
        return {**self.__dict__, "kept": {}}

    def load_configuration(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader.load_configuration(*args, **kwargs)

    def get_search_path(self) -> Any:
        return self.loader.get_search_path()

    def get_sources(self) -> Any:
        return self.loader.get_sources()

    def list_groups(self, parent_name: str) -> Any:
        return self.loader.list_groups(parent_name)

    def get_group_options(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader.get_group_options(*args, **kwargs)

    def compute_defaults_list(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader.compute_defaults_list(*args, **kwargs)
