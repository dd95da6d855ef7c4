"""A sweep's check before launch, whose result its jobs run with.

:func:`check_sweep` asks :func:`mip.job.check_job` of every distinct combination of settings a
sweep's jobs get, before any job is launched, and refuses the sweep if one would be refused.
Where the jobs run in this process (Hydra's basic launcher), each job then runs with what its
combination's check built (:func:`checked_for`) instead of checking itself again: one check a
job, one place that decides whether it may run. A job run alone, or elsewhere (SLURM, submitit's
local processes), checks itself (:func:`mip.job.run_job`).

>>> combination(["model=m", "seed=1", "pattern=majority_first"])
(('model=m',), 'majority_first')
>>> checked_for(["model=m", "seed=2", "pattern=majority_first"]) is None   # no sweep checked it here
True
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from omegaconf import DictConfig

if TYPE_CHECKING:
    from mip.job import CheckedJob

CHECK_LINE_EVERY_S = 5.0
"""A sweep's checks before launch say how far they are at most this often."""

#: Each combination's check, made before launch by the sweep under way in this process.
_CHECKED: dict[tuple[tuple[str, ...], str | None], CheckedJob] = {}


def _override_key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def combination(job: list[str]) -> tuple[tuple[str, ...], str | None]:
    """A job's settings as the sweep's check groups them: its overrides but the seed and the
    pattern (seeds never change whether a job can run), and its pattern."""
    rest = tuple(o for o in job if _override_key(o) not in ("seed", "pattern"))
    pattern = next((o.partition("=")[2] for o in job if _override_key(o) == "pattern"), None)
    return rest, pattern


def checked_for(job: list[str]) -> CheckedJob | None:
    """What the sweep's check built for this job's settings (its overrides), where it ran in
    this process; None where the job must check itself."""
    return _CHECKED.get(combination(list(job)))


def forget() -> None:
    """The sweep has ended: its checks are no longer any job's."""
    _CHECKED.clear()


def sweep_jobs(config: DictConfig) -> list[list[str]] | None:
    """The override lists of the jobs a sweep launches, as mip's sweeper splits them
    (glob(*) and the presets' sweeper params included); None for another sweeper or what
    cannot be parsed."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from mip.entry.compositions import split_jobs

    if not str(config.hydra.sweeper.get("_target_", "")).endswith("MipSweeper"):
        return None
    try:
        params = [f"{k}={v}" for k, v in (config.hydra.sweeper.params or {}).items()]
        parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
        batches = split_jobs(parser.parse_overrides(params + list(config.hydra.overrides.task)))
        return [list(job) for batch in batches for job in batch]
    except Exception:  # noqa: BLE001 - progress and checks are no reason to stop a sweep here
        return None


def _launcher(config: DictConfig) -> str:
    return str(config.hydra.launcher.get("_target_", ""))


def _grouped(jobs: list[list[str]]) -> tuple[dict[tuple[str, ...], dict[str | None, list[str]]], dict[tuple, int]]:
    """The jobs grouped by :func:`combination` (the first job of each), and how many jobs each stands for."""
    combinations: dict[tuple[str, ...], dict[str | None, list[str]]] = {}
    count: dict[tuple, int] = {}
    for job in jobs:
        rest, pattern = combination(job)
        combinations.setdefault(rest, {}).setdefault(pattern, job)
        count[rest, pattern] = count.get((rest, pattern), 0) + 1
    return combinations, count


def check_sweep(config: DictConfig, jobs: list[list[str]] | None, seen: list | None = None) -> str | None:
    """Why a job of the sweep would be refused, asked of every distinct combination of settings
    its jobs get (:func:`sweep_jobs`) by the check each job would make of itself
    (:func:`mip.job.check_job`: settings, budget and window, strategy, store, the model's
    package and key where the jobs run here, every task's data); None when every job would
    run. A cluster launcher's jobs run elsewhere: the package (vLLM) and the key are the node's,
    and each job checks them itself before its first call. Patterns are checked on one
    composition each. A sweeper other than mip's: the command's fixed settings.
    ``preflight=only`` runs no job: only the settings its request is made with. ``seen`` collects
    each combination checked, as (its config, what the check built, the jobs it stands for), for
    the sweep's cost and the load on one key (:mod:`mip.entry.sweep_limits`)."""
    from dataclasses import replace

    from hydra import compose
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    from mip.config import Config, PatternConfig
    from mip.data import DataError
    from mip.job import check_job
    from mip.job.checks import settings
    from mip.models import BackendSetupError

    forget()
    if jobs is None:
        parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
        jobs = [[o.input_line for o in parsed if not o.is_sweep_override()]]
    here = not _launcher(config).endswith("SlurmLauncher")  # elsewhere: the engine and key are the node's
    in_process = _launcher(config).endswith("BasicLauncher")  # the jobs can run with these checks
    combinations, count = _grouped(jobs)
    said = time.monotonic()
    for done, (rest, patterns) in enumerate(combinations.items()):
        if time.monotonic() - said >= CHECK_LINE_EVERY_S:  # a long check says how far it is
            said = time.monotonic()
            print(f"  checked {done} of {len(combinations)} distinct job settings …", flush=True)
        try:
            typed = OmegaConf.to_object(compose(config_name="config", overrides=list(rest)))
        except Exception:  # noqa: BLE001 - a key the schema lacks: run.py's check_keys names it
            continue
        if not isinstance(typed, Config):
            continue
        for pattern, job in patterns.items():
            cfg = replace(typed, pattern=PatternConfig(name=pattern)) if pattern else typed
            try:
                if config.preflight == "only":
                    settings(cfg)
                    continue
                checked = check_job(cfg, builds_backend=here)
            except (ValueError, DataError, BackendSetupError) as e:
                forget()
                return f"{e}" + (f" (job {' '.join(job)})" if len(combinations) > 1 else "")
            if seen is not None:
                seen.append((cfg, checked, count[rest, pattern]))
            if in_process:
                _CHECKED[(rest, pattern)] = checked
    return None
