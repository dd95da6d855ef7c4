"""run.py's command: one Hydra job. Its keys and sweep preset checked, the typed config handed
to :func:`mip.job.run_job` (with the sweep's check of its settings where the sweep ran here,
:mod:`mip.entry.sweep_checks`), then one line of what it did or, in a dry run, would do. A
refusal is one line (exit 2) that leaves no job folder; in a sweep a model's refusal stops that
model's jobs only; a stop on a signal drains what is in flight and says how to carry on. run.py
itself only declares the Hydra app.

    python run.py task=arith n=10 p=0.6 pattern=random

Exercised by ``pytest tests/test_cli.py tests/test_runner.py tests/test_stop.py``.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from mip.config import Config
from mip.data import DataError
from mip.entry.cli import NEXT_STEPS, check_keys, check_overrides, check_sweep_preset
from mip.entry.config_store import with_task_source
from mip.entry.per_job import per_job
from mip.entry.refusals import refusals
from mip.entry.stops import stopped, stopped_in_job
from mip.entry.sweep_checks import checked_for
from mip.job import JobSummary, StoreError, run_job
from mip.job.notices import first_time
from mip.job.stop import JobStopped
from mip.models import BackendSetupError
from mip.models.fail_fast import ProviderRefused
from mip.tools.run_summary import describe
from mip.tracking.tracker import run_group, sync_hint

log = logging.getLogger("mip")


def run(cfg: DictConfig) -> None:
    """The body of run.py's Hydra app: the job, then what it did."""
    hydra_cfg = HydraConfig.get()
    sweep = hydra_cfg.sweep.dir if hydra_cfg.mode == RunMode.MULTIRUN else None
    # A refusal (exit 2) leaves no job folder behind.
    # In a sweep a model's refusal stops that model's jobs only: the others run (its summary lists it).
    refused = () if sweep else (ProviderRefused,)
    try:
        with refusals(hydra_cfg.runtime.output_dir, sweep, ValueError, DataError, BackendSetupError, StoreError,
                       *refused):
            check_keys(cfg, Config)
            check_sweep_preset(hydra_cfg)
            config: Config = with_task_source(OmegaConf.to_object(cfg), hydra_cfg.runtime.config_sources)
            if config.logger.group is None:  # one W&B group per sweep (or single run): its folder under results/
                config.logger.group = run_group(sweep or hydra_cfg.run.dir, config.paths.results_dir)
            # the sweep's check of this job's settings where it ran here (mip.entry.sweep_checks), else the job's own
            checked = checked_for(list(hydra_cfg.overrides.task)) if sweep else None
            summary = run_job(config, hydra_cfg.runtime.output_dir, checked=checked)
    except ProviderRefused as e:  # a sweep's job: said once per model, and the sweep goes on
        print(f"{'skipped' if e.skipped else 'error'}: {e}", file=sys.stderr, flush=True)
        return
    except JobStopped as e:  # drained: what arrived is stored; submitit (if it runs the job) requeues it
        print(f"error: {e}", file=sys.stderr, flush=True)
        if signal.SIGINT in e.drain.received:  # Ctrl-C: the summary so far and the command that carries on
            stopped_in_job("Ctrl-C", sys.argv[1:], hydra_cfg.runtime.output_dir)
        e.drain.hand_over()
    said(summary, config, hydra_cfg, sweep)


def said(summary: JobSummary, config: Config, hydra_cfg: DictConfig, sweep: str | None) -> None:
    """What the job did (or, in a dry run, would do), in one line; a run alone also prints its
    summary, and exits 1 where experiments are left unstored (a sweep goes on, and exits
    non-zero at its end)."""
    job = f"[{hydra_cfg.job.override_dirname or 'defaults'}]"
    if summary.dry_run:  # one line a job: a sweep's summary splits the cost by slice and task
        tokens = summary.tokens_from or "counted"  # how they were counted: said once a sweep
        if sweep and not first_time(sweep, tokens):
            tokens = "estimated (as above)" if summary.tokens_estimated else "counted (as above)"
        log.info(f"{job} would run {summary.experiments - summary.already_stored} of {summary.experiments} experiments "
                 f"({summary.already_stored} already stored), {summary.prompt_tokens:,} prompt tokens "
                 f"{tokens}; {summary.overflowing} would not fit the context window "
                 f"({config.model.context_window:,}: input_overflow without a call); output tokens at most "
                 f"{summary.max_output_tokens:,} (one attempt each)")
    else:
        log.info(
            f"{job} ran {summary.experiments} experiments "
            f"({summary.already_stored} already stored, {summary.stored_now} stored now, {summary.unstored} unstored"
            f"{f', {summary.left_to_other_jobs} left to a running job' if summary.left_to_other_jobs else ''}), "
            f"{summary.prompt_tokens:,} prompt tokens{' (estimated)' if summary.tokens_estimated else ''}; "
            f"verdicts {summary.verdicts or '-'}"
        )
    if hint := sync_hint([Path(summary.wandb_offline_run)] if summary.wandb_offline_run else []):
        # a sweep says it once at its end, for all its runs (mip.entry.hydra_callbacks); each job's log keeps its own
        (log if hydra_cfg.mode == RunMode.RUN else logging.getLogger("mip.file")).info(hint)
    if hydra_cfg.mode == RunMode.RUN:
        log.info(describe(Path(summary.output_dir)))
        if not hydra_cfg.overrides.task:  # plain `python run.py`: say where to go from here
            log.info(NEXT_STEPS.format(output_dir=summary.output_dir))
    if not summary.ok:
        log.error("\n".join(summary.errors[-20:]))
        if hydra_cfg.mode == RunMode.RUN:  # a sweep goes on, and exits non-zero at its end
            sys.exit(1)


def start(main: Callable[[], None], conf: Path) -> None:
    """``python run.py …``: the command line checked before Hydra composes, then ``main``; Ctrl-C
    between a sweep's jobs (inside a job it is a drained stop) is one line, no traceback."""
    check_overrides(sys.argv[1:], Config, "run.py", groups=("experiment",), conf_dir=conf)
    sys.argv[1:] = per_job(sys.argv[1:])  # a swept model's keys (-m model=a,b model.base_url=…) go to each job
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(stopped("Ctrl-C", sys.argv[1:]))
