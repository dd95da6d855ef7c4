"""A refused job leaves nothing behind: its folder, which Hydra made before the job could
check its settings, is removed when the job stops with exit 2 (a one-line error) before
doing any work; a job that failed after starting keeps its folder and log.

    with refusals(output_dir, sweep_dir, ValueError):   # run.py's main
        run_job(config, output_dir)

Exercised by ``pytest tests/test_refusals.py``.

>>> import tempfile
>>> from mip.job.job_summary import StoreError
>>> folder = tempfile.mkdtemp()   # a job folder without job.json: the job did no work
>>> before_any_work(folder, None), before_any_work(folder, StoreError("disk full"))
(True, True)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

# What Hydra and a job write into a job folder before any work is done (the config, the log named after the
# entry point, the manifest): a refused job's folder holds nothing else, and is removed.
BEFORE_ANY_RECORD = {".hydra", "job.json"}


def _made_before_any_record(path: Path) -> bool:
    return path.name in BEFORE_ANY_RECORD or (path.suffix == ".log" and path.is_file())


def discard_job_folder(folder: str | os.PathLike, sweep_folder: str | os.PathLike | None = None) -> None:
    """Remove a refused job's folder when it holds only what Hydra and the job wrote before
    any work (:data:`BEFORE_ANY_RECORD`, ``<entry point>.log``), then a sweep folder left with only Hydra's
    ``multirun.yaml``, then the date folders above them if they are left empty."""
    job = Path(folder)
    if not job.is_dir() or not all(_made_before_any_record(p) for p in job.iterdir()):
        return
    shutil.rmtree(job)
    top = job
    sweep = Path(sweep_folder) if sweep_folder else None
    if sweep is not None and sweep.is_dir() and {p.name for p in sweep.iterdir()} <= {"multirun.yaml"}:
        shutil.rmtree(sweep)
        top = sweep
    remove_empty_parents(top)


def remove_empty_parents(folder: Path) -> None:
    """Remove the date folder above a removed run or sweep folder, then ``runs/`` or ``sweeps/``,
    each only where it is left empty (another run's folder keeps it)."""
    for parent in folder.parents[:2]:  # <day>, then runs/ or sweeps/
        try:
            parent.rmdir()
        except OSError:  # not empty: another job's
            break


def before_any_work(folder: str | os.PathLike, error: BaseException | None) -> bool:
    """Whether a job stopped by ``error`` (None: one of the entry point's own checks) did no
    work: it stopped before writing its manifest (checks, settings, data, a store folder that
    cannot be written — whatever refused it), or while setting up its backend (a missing key
    or package: before any call). A job that wrote its manifest may have called, and a store
    that failed then failed mid-job: its folder and log stay."""
    from mip.models import BackendSetupError

    return isinstance(error, BackendSetupError) or not (Path(folder) / "job.json").exists()


@contextlib.contextmanager
def refusals(folder: str | os.PathLike, sweep_folder: str | os.PathLike | None, *errors: type[BaseException]):
    """Turn ``errors`` raised inside into ``error: …`` on one line and exit 2; on any exit 2
    (a check's refusal too) before any work, remove the job's folder."""
    try:
        yield
    except errors as e:  # say what to do, no traceback
        print(f"error: {e}", file=sys.stderr)
        if before_any_work(folder, e):
            discard_job_folder(folder, sweep_folder)
        sys.exit(2)
    except SystemExit as e:
        if e.code == 2 and before_any_work(folder, None):
            discard_job_folder(folder, sweep_folder)
        raise
