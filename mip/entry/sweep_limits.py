"""What a sweep may spend and send at once, checked before it launches: its expected cost
against ``max_cost`` (:mod:`mip.job.spend_cap`), and the requests it puts in flight on one API
key at once: its jobs that run side by side times each job's ``model.max_concurrency``, said by a
dry run, and bounded by ``key_concurrency``.

Hydra's basic launcher runs one job at a time; ``submitit_local`` starts every job at once; a
SLURM array runs up to ``array_parallelism`` (64 in ``slurm_cpu``). The paper's core grid on
``slurm_cpu`` is 21 jobs × 32 = 672 requests in flight on one key. With ``key_concurrency`` set,
a SLURM array runs only as many jobs at once as fit under it; another launcher's sweep over it
is refused with the ``model.max_concurrency`` that fits.

>>> parallel_jobs("hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher", 64, 21)
21
>>> parallel_jobs("hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher", 8, 21)
8
>>> print(load("gpt_oss_120b", jobs=21, at_once=21, per_job=32, bound=None).replace("; ", ";\\n"))
gpt_oss_120b: up to 672 requests in flight on its key (21 job(s) at once × model.max_concurrency 32);
key_concurrency=N bounds it
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig


def parallel_jobs(launcher: str, array_parallelism: int | None, jobs: int) -> int:
    """How many of ``jobs`` a launcher runs at once."""
    if launcher.endswith("BasicLauncher"):
        return 1
    if launcher.endswith("SlurmLauncher") and array_parallelism:
        return min(jobs, int(array_parallelism))
    return jobs  # submitit's local launcher starts them all


def load(model: str, jobs: int, at_once: int, per_job: int, bound: int | None) -> str:
    """One line: the requests in flight on ``model``'s key at most, and what bounds it."""
    how = f"{at_once} job(s) at once × model.max_concurrency {per_job}"
    tail = f"; key_concurrency={bound} bounds it" if bound else "; key_concurrency=N bounds it"
    return f"{model}: up to {at_once * per_job:,} requests in flight on its key ({how}){tail}"


def bounded(launcher: str, per_job: int, bound: int, model: str) -> tuple[int | None, str | None]:
    """``(array_parallelism that fits, None)`` for a SLURM array, else ``(None, why it is refused)``
    — where ``bound`` is below one job's own concurrency, a refusal for every launcher."""
    if bound < per_job:
        return None, (f"key_concurrency={bound} is below {model}'s model.max_concurrency={per_job}: set "
                      f"model.max_concurrency={bound} or raise key_concurrency")
    if launcher.endswith("SlurmLauncher"):
        return bound // per_job, None
    return None, (f"{model}: this launcher runs every job at once, over key_concurrency={bound}; set "
                  f"model.max_concurrency to key_concurrency / the jobs, or use hydra/launcher=local or slurm_cpu")


def sweep_cost_refusal(config: DictConfig, checked: list) -> str | None:
    """Why the sweep may not start for what it is expected to cost (:mod:`mip.job.spend_cap`):
    each checked combination's expected cost (:mod:`mip.job.expected_cost`) times its jobs."""
    from mip.job.expected_cost import expected_usd, priced
    from mip.job.spend_cap import refusal

    if config.dry_run or config.preflight == "only" or not checked:
        return None
    if len(checked) >= 10 and any(priced(cfg) for cfg, _, _ in checked):  # seconds: said
        print(f"  counting the expected cost of {len(checked)} distinct job settings …", flush=True)
    costs = [expected_usd(cfg, built, said_in=str(config.hydra.sweep.dir)) for cfg, built, _ in checked]
    if all(c is None for c in costs):  # no priced model: nothing to cap
        return None
    expected = sum((c or 0.0) * jobs for c, (_, _, jobs) in zip(costs, checked))
    return refusal(expected, config.max_cost, config.confirm_cost_above, config.yes)


def key_load(config: DictConfig, checked: list) -> str | None:
    """Say (in a dry run) the requests in flight on each API model's key, and bound them by
    ``key_concurrency`` (:func:`bounded`); why the sweep is refused, or None."""
    from omegaconf import open_dict

    launcher = str(config.hydra.launcher.get("_target_", ""))
    per_model: dict[str, tuple[int, int]] = {}  # model: (its jobs, requests in flight a job)
    for cfg, _, jobs in checked:
        if getattr(cfg.model, "api_key_env", None) and hasattr(cfg.model, "max_concurrency"):
            had = per_model.get(cfg.model.name, (0, 0))
            per_model[cfg.model.name] = (had[0] + jobs, max(had[1], int(cfg.model.max_concurrency)))
    total = sum(jobs for _, _, jobs in checked)
    at_once = parallel_jobs(launcher, config.hydra.launcher.get("array_parallelism"), total)
    bound = config.get("key_concurrency")
    for model, (jobs, per_job) in per_model.items():
        if config.dry_run:
            print(load(model, jobs, min(at_once, jobs), per_job, bound), flush=True)
        if bound and min(at_once, jobs) * per_job > bound:
            fits, why = bounded(launcher, per_job, int(bound), model)
            if why:
                return why
            with open_dict(config.hydra.launcher):
                config.hydra.launcher.array_parallelism = max(1, min(fits, at_once))
            print(f"{model}: {fits} job(s) at once (hydra.launcher.array_parallelism) to keep its key under "
                  f"key_concurrency={bound}", flush=True)
    return None
