"""A launcher that cannot start: one line, exit 2, and no sweep folder left.

A cluster launcher (submitit's SLURM launcher) submits through ``sbatch``; on a machine where
SLURM cannot take jobs (no ``srun``, no ``sbatch``, no configuration or controller) submitit
raises with a long traceback after the sweep's folder was made. :func:`refused_launch` turns a
failed submission into one line that says what is missing and what to do, and removes the
folder when none of the sweep's jobs had been submitted. Errors after submission (a job's own)
are left to the launcher.

>>> why_not_submitted(RuntimeError('Could not detect "srun", are you indeed on a slurm cluster?'))
'no srun here'
>>> why_not_submitted(FileNotFoundError(2, "No such file or directory", "sbatch"))
'no sbatch here'
>>> why_not_submitted(ValueError("a job's own error")) is None
True
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

from mip.entry.refusals import remove_empty_parents

ADVICE = "submit from the cluster's login node, or run the sweep on this machine with hydra/launcher=local"


class NotSubmitted(Exception):
    """The cluster took none of the jobs of a submission; the message says why, in one line."""


def why_not_submitted(error: BaseException) -> str | None:
    """Why a launch raised before its jobs were submitted, in a few words; None for any other error."""
    if isinstance(error, NotSubmitted):
        return str(error)
    if isinstance(error, RuntimeError) and '"srun"' in str(error):  # submitit's SLURM executor, made per launch
        return "no srun here"
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"no {Path(str(error.filename)).name} here"
    return None


@contextlib.contextmanager
def _quiet_submission() -> Iterator[None]:
    """While the launch lasts, submitit's submission command runs with its stderr held: printed
    as it came where the submission works, the last line of it the reason where it fails."""
    try:
        from submitit.core.core import PicklingExecutor
    except ImportError:  # no submitit: nothing of it to watch
        yield
        return
    original = PicklingExecutor._submit_command

    def submit(self: Any, command: str) -> Any:
        held = io.StringIO()
        try:
            with contextlib.redirect_stderr(held):
                job = original(self, command)
        except Exception as e:  # noqa: BLE001 - any failure of the submission command is one
            lines = [line.strip() for line in (held.getvalue() + "\n" + str(e)).splitlines() if line.strip()]
            raise NotSubmitted(lines[-1] if lines else type(e).__name__) from e
        sys.stderr.write(held.getvalue())
        return job

    PicklingExecutor._submit_command = submit  # type: ignore[method-assign]
    try:
        yield
    finally:
        PicklingExecutor._submit_command = original  # type: ignore[method-assign]


@contextlib.contextmanager
def refused_launch(sweep_dir: Path, submitted: int) -> Iterator[None]:
    """Launch a batch; a submission that fails ends the sweep with one line, exit 2, and the
    sweep's folder removed where ``submitted`` (its jobs launched before this batch) is 0."""
    try:
        with _quiet_submission():
            yield
    except Exception as e:
        why = why_not_submitted(e)
        if why is None:
            raise
        if submitted:
            print(f"error: the cluster took no more jobs ({why}) after {submitted} were submitted; {ADVICE}. "
                  f"Their folder {sweep_dir} is kept: rerun the same command to submit the rest.", file=sys.stderr)
            sys.exit(2)
        shutil.rmtree(sweep_dir, ignore_errors=True)
        remove_empty_parents(sweep_dir)  # the day's folder and sweeps/, where this sweep was their only one
        print(f"error: SLURM cannot take jobs from this machine ({why}); {ADVICE}. Nothing was launched.",
              file=sys.stderr)
        sys.exit(2)
