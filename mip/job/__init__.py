"""The job core: plan a job's experiments, call what is not stored, keep every paid attempt.

- :mod:`mip.experiment.planning` — planning: experiments, keys (:mod:`mip.experiment.keys`) and prompts;
- :mod:`mip.job.checks` — the one check of a job's settings and data, whose result the job runs with;
- :mod:`mip.job.job_run` — one job top to bottom (check, plan, claim, call, manifest);
- :mod:`mip.job.loop` — attempt rounds and storing;
- :mod:`mip.job.collector` — the cycle collector's setting while a job calls;
- :mod:`mip.strategies` — how one attempt is made (single call, self-prompting, decomposed, …);
- :mod:`mip.job.tokens` — prompt tokens and the one context-window check;
- :mod:`mip.job.dry_run` — what a job would send, by its strategy's count of an attempt;
- :mod:`mip.job.provenance` — git commit and the job folder's manifest;
- :mod:`mip.job.stop` — a drained stop on SIGTERM, SIGINT or submitit's preemption signal.

>>> from mip.job import run_job
>>> summary = run_job(cfg, "results/runs/demo")          # doctest: +SKIP
"""

from mip.job.provenance import git_commit
from mip.job.checks import CheckedJob, check_job, load_pools
from mip.job.job_run import run_job
from mip.job.job_summary import JobSummary, StoreError

__all__ = ["CheckedJob", "JobSummary", "StoreError", "check_job", "git_commit", "load_pools", "run_job"]
