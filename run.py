"""Run experiments: one Hydra job per (model, pattern, seed, budget, prompt variant, setting).

    python run.py -m +experiment=demo                          # the embedded demo
    python run.py task=sentiment n=100 p=0.7 data_dir=../shared/data/raw
    python run.py -m pattern=glob(*) seed=0,1,2 dry_run=true   # count the core grid
"""

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from mip.config import Config, register
from mip.data import DataError
from mip.models import BackendSetupError
from mip.runner import StoreError, run_job
from mip.summary import describe

register()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    config: Config = OmegaConf.to_object(cfg)
    hydra_cfg = HydraConfig.get()
    if config.logger.group is None:  # one W&B group per sweep (or single run)
        folder = hydra_cfg.sweep.dir if hydra_cfg.mode == RunMode.MULTIRUN else hydra_cfg.run.dir
        config.logger.group = "/".join(Path(folder).parts[-2:])
    try:
        summary = run_job(config, hydra_cfg.runtime.output_dir)
    except (ValueError, DataError, BackendSetupError, StoreError) as e:  # say what to do, no traceback
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    verb = "would run" if summary.dry_run else "ran"
    print(
        f"[{hydra_cfg.job.override_dirname or 'defaults'}] {verb} {summary.experiments} experiments "
        f"({summary.already_stored} already stored, {summary.stored_now} stored now, {summary.unstored} unstored"
        f"{f', {summary.left_to_other_jobs} left to a running job' if summary.left_to_other_jobs else ''}), "
        f"{summary.prompt_tokens:,} prompt tokens{' (estimated)' if summary.tokens_estimated else ''}; "
        f"verdicts {summary.verdicts or '-'}"
    )
    if summary.dry_run:
        print(f"  prompt tokens {summary.tokens_from}; {summary.overflowing} experiment(s) would not fit the context "
              f"window ({config.model.context_window:,}) and be stored as input_overflow without a call; "
              f"output tokens at most {summary.max_output_tokens:,}")
    if hydra_cfg.mode == RunMode.RUN:
        print(describe(Path(summary.output_dir)))
    if not summary.ok:
        print("\n".join(summary.errors[-20:]), file=sys.stderr)
        if hydra_cfg.mode == RunMode.RUN:  # a sweep goes on, and exits non-zero at its end
            sys.exit(1)


if __name__ == "__main__":
    main()
