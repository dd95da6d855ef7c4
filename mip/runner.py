"""Moved: the job core is :mod:`mip.job` (mip 0.3). These names stay importable from here
for scripts written against mip 0.2 (mip 0.2's ``validate`` is :func:`mip.job.check_job`)."""

from mip.job import JobSummary, StoreError, check_job, git_commit, load_pools, run_job
from mip.job.tokens import counted, estimate_tokens
from mip.models.calls import CallStats, call_with_retries

__all__ = ["CallStats", "JobSummary", "StoreError", "call_with_retries", "check_job", "counted", "estimate_tokens",
           "git_commit", "load_pools", "run_job"]
