"""Stops that speak: Ctrl-C between a sweep's jobs, or inside a job once it has drained, prints
the summary so far and the command that carries on from what is stored.

>>> rerun_command(["-m", "model=mock", "pattern=glob(*)"])
"python run.py -m model=mock 'pattern=glob(*)'"
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from mip.entry.hydra_callbacks import SummaryCallback


def rerun_command(command: list[str], program: str = "run.py") -> str:
    """The command as typed, quoted for the shell, any key typed in it masked."""
    from mip.config.redact import mask_text, typed_secrets

    return mask_text(" ".join(["python", program, *map(shlex.quote, command)]), typed_secrets(command))


def stopped(how: str, command: list[str], program: str = "run.py") -> int:
    """Say, when a stop (Ctrl-C) ends a run or sweep outside a job's own drained stop (between
    jobs, before a job calls): the sweep's summary so far, then one line with how far it got and
    the command that carries on from what is stored. Returns the exit code (130, as for SIGINT)."""
    from mip.tools.run_summary import describe

    rerun = rerun_command(command, program)
    running = SummaryCallback.running
    if running is None or running.folder is None:
        print(f"error: stopped by {how} before the job called a model; nothing was paid. Run the same command "
              f"again to start it: {rerun}", file=sys.stderr, flush=True)
        return 130
    total = running.sweep[1] if running.sweep else "?"
    if running.folder.is_dir() and any(running.folder.rglob("job.json")):
        print("\n== sweep summary (stopped) ==\n" + describe(running.folder), flush=True)
    print(f"error: stopped by {how} after {running.done}/{total} jobs of the sweep in {running.folder}; what they "
          f"stored is kept. Run the same command again to carry on (what is stored is not asked again): {rerun}",
          file=sys.stderr, flush=True)
    return 130


def stopped_in_job(how: str, command: list[str], output_dir: str | Path, program: str = "run.py") -> None:
    """Say, when a stop (Ctrl-C) ended a job after it drained: a sweep's summary so far (or the
    run's), then the command that carries on."""
    from mip.tools.run_summary import describe

    if SummaryCallback.running is not None:
        stopped(how, command, program)
        return
    print("\n== run summary (stopped) ==\n" + describe(Path(output_dir)), flush=True)
    print(f"error: stopped by {how}; what it stored is kept. Run the same command again to carry on (what is "
          f"stored is not asked again): {rerun_command(command, program)}", file=sys.stderr, flush=True)
