"""Provenance: the git commit of the code that ran, and the job folder's manifest.

Every job folder holds the resolved ``config.yaml`` and ``job.json`` (git commit, mip
version, the keys the job covered, counts), both written atomically.

>>> now().endswith("+00:00")   # UTC, to the second
True
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import subprocess
import time
from pathlib import Path
from typing import TypedDict

import mip
from mip.config import Config, to_plain
from mip.config.redact import mask_text, secret_values
from mip.job.job_summary import JobSummary
from mip.data.files import atomic_write


class GitState(TypedDict):
    """The code that runs: its commit (None outside a git checkout) and whether the work tree
    had uncommitted changes."""

    commit: str | None
    dirty: bool


def git_commit() -> GitState:
    """The commit of the code that runs, and whether the work tree had changes; asked of git
    once per process (two subprocesses: ~30 ms a job of a sweep), as its jobs run the code
    imported when it started."""
    return GitState(**_git_state())


@functools.cache
def _git_state() -> GitState:
    root = Path(mip.__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True)
            return done.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


_second: tuple[int, str] = (-1, "")  # the last second :func:`now` wrote, and how


def now() -> str:
    """The UTC time to the second, in ISO 8601 (``2026-12-04T03:11:23+00:00``); written once a
    second, as the hundreds of records a job stores in one second share it."""
    global _second
    second = int(time.time())
    if second != _second[0]:
        _second = (second, dt.datetime.fromtimestamp(second, dt.timezone.utc).isoformat())
    return _second[1]


def write_manifest(output_dir: Path, cfg: Config, git: GitState, summary: JobSummary) -> None:
    """The job's output folder: resolved config (secrets masked), git commit and what the job covered."""
    import yaml

    config_file = output_dir / "config.yaml"
    plain = to_plain(cfg)
    if not config_file.exists():  # the config does not change during the job
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml where PyYAML has it: ~10x faster
        text = yaml.dump(plain, Dumper=dumper, sort_keys=False, allow_unicode=True)
        atomic_write(config_file, text, durable=False)
    payload = {"git": git, "mip_version": mip.__version__, "written_at": now(), **summary.__dict__}
    atomic_write(output_dir / "job.json", mask_text(json.dumps(payload, indent=1), secret_values(
        dataclasses.asdict(cfg))), durable=False)
