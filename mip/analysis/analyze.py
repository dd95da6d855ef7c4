"""analyze.py's work: read records from the chosen source, write the report."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from mip.config import AnalyzeConfig, to_plain
from mip.analysis.out_dirs import claim, inputs_of
from mip.analysis.headline import render
from mip.analysis.report import html, write_report
from mip.analysis.report.cells import Table
from mip.analysis.report.model_sets import TracePool
from mip.analysis.report.record_pages import Rebuild
from mip.analysis.results import ResultsError, load_local, load_wandb_api, load_wandb_offline
from mip.analysis.slices import restrict


def load(cfg: AnalyzeConfig):
    if cfg.source == "local":
        return load_local(cfg.results)
    if cfg.source == "wandb":
        if cfg.wandb.project:
            return load_wandb_api(cfg.wandb.project, cfg.wandb.entity, cfg.wandb.group, cfg.wandb.tags)
        return load_wandb_offline(cfg.results)
    raise ResultsError(f"Unknown source {cfg.source!r}; choose local or wandb.")


def analysis_inputs(cfg: AnalyzeConfig) -> dict:
    """What the report is written from, as its out_dir keeps it (mip.analysis.out_dirs)."""
    return inputs_of(cfg.source, cfg.results if not cfg.wandb.project else [], where=to_plain(cfg.where),
                     core=cfg.core, wandb=to_plain(cfg.wandb) if cfg.wandb.project else None)


def analyze(cfg: AnalyzeConfig, show: Callable[[str], None] | None = None, prompts: Rebuild | None = None) -> Path:
    """Write the report; ``show`` (analyze.py: print) gets the headline table, per slice; ``prompts``
    rebuilds a record's prompt for report.html (analyze.py: :class:`mip.tools.prompt_source.Rebuilder`)."""
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if show is not None else None
    started = time.monotonic()
    frame = load(cfg)
    if say is not None:
        say(f"read {len(frame)} records in {time.monotonic() - started:.0f} s")
    inputs = analysis_inputs(cfg)
    restrict(frame, cfg.where)  # a folder without records, or slices that match none, are said first
    if refusal := claim(cfg.out_dir, inputs):
        raise ResultsError(refusal)
    core = (int(cfg.core[0]), float(cfg.core[1])) if cfg.core else None
    logged = (lambda folder, tables, images: log_report(folder, cfg, tables, images)) if cfg.wandb.log_report else None
    summary = (lambda table: show(render(table))) if show is not None else None
    return write_report(frame, cfg.out_dir, cfg.filter_dir, cfg.where, core, TracePool.of(cfg.coverage),
                        source(cfg, prompts), say, logged, summary)


def source(cfg: AnalyzeConfig, prompts: Rebuild | None = None) -> html.Source:
    """Where the records were read, for report.html's record pages."""
    return html.Source(cfg.source, tuple(map(str, cfg.results)), bool(cfg.wandb.project), prompts)


def log_report(folder: Path, cfg: AnalyzeConfig, tables: list[Table], images: list[Path]) -> None:
    """The report's figures and tables (the structure report.md and report.html render,
    :mod:`mip.analysis.report.cells`) as a W&B run in the sweep's group, in the mode the user set
    (mip.tracking.tracker.wandb_mode: WANDB_MODE, else online with WANDB_API_KEY, else offline)."""
    import wandb

    from mip.tracking.tracker import wandb_mode

    mode = wandb_mode(None)
    if mode == "disabled":
        return
    run = wandb.init(project=cfg.wandb.project or "mip", entity=cfg.wandb.entity, group=cfg.wandb.group,
                     job_type="analysis", dir=str(folder), mode=mode,
                     settings=wandb.Settings(silent=True, x_disable_meta=True, console="off"))
    for png in images:
        run.log({f"figures/{png.stem}": wandb.Image(str(png))})
    for table in tables:
        run.log({f"tables/{table.name}": wandb.Table(dataframe=table.frame)})
    run.finish()
