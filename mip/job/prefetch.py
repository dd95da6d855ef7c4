"""Shared batches for jobs that run one after another in one process.

A sweep's jobs (one per pattern, say) each hand the model only their own few prompts. On
a CPU a decoding step streams all the weights whatever the batch: for SmolLM2-135M a step
took 0.21 s with two prompts and 0.41 s with fourteen (measured 2026-12-02 on a busy 2-core
machine), so the embedded demo's seven jobs of two prompts cost about three times one batch
of fourteen. Here the first
requests of several jobs are generated in one go by a backend that can keep completions
for later (:meth:`mip.models.hf_local.HFBackend.prefetch`); each job then runs as usual
(:func:`mip.job.run_job`), with the same backend, and gets its completions without waiting.

>>> backend = build_backend(configs[0].model, configs[0].paths.cache_dir)   # doctest: +SKIP
>>> prefetch_jobs(configs, backend)   # doctest: +SKIP
>>> for cfg in configs:   # doctest: +SKIP
...     run_job(cfg, folder / cfg.pattern.name, backend=backend)

Nothing is stored here: the jobs store, score and record as they always do, and a request
a job makes that was not prefetched is generated then.
"""

from __future__ import annotations

from collections.abc import Sequence

from mip.config import Config
from mip.job.checks import CheckedJob, check_job
from mip.job.job_run import pending
from mip.job.tokens import context_for
from mip.models import Backend, Request
from mip.store import Store


def first_requests(cfg: Config, backend: Backend, checked: CheckedJob | None = None) -> list[Request]:
    """The requests job ``cfg`` will send first: one per experiment not yet stored whose
    prompt fits the context window, built as the job builds them. Only a strategy whose
    first request is known before any call has them (:attr:`mip.strategies.Strategy.ahead`).
    ``checked``: what :func:`mip.job.check_job` built for ``cfg``, where the caller has it."""
    checked = check_job(cfg, builds_backend=False) if checked is None else checked
    if not checked.strategy.ahead:
        return []
    _, _, todo = pending(cfg, Store(cfg.paths.store_dir), checked.pools, checked.strategy)
    counts = backend.count_tokens([p.prompt for p in todo]) if todo else None
    ctx = context_for(cfg, backend)
    requests = []
    for plan, n_tokens in zip(todo, counts or ()):
        if not ctx.overflows(n_tokens):
            requests.append(ctx.request(plan.key, plan.prompt, n_tokens))
        plan.release()
    return requests


def prefetch_jobs(configs: Sequence[Config], backend: Backend, checks: Sequence[CheckedJob] | None = None) -> int:
    """Generate the first requests of every job in ``configs`` in shared batches; returns
    how many. A backend that cannot keep completions for later gets nothing to do.
    ``checks``: each job's, built once by :func:`mip.job.check_job` (the caller then hands
    the same to :func:`mip.job.run_job`)."""
    prefetch = getattr(backend, "prefetch", None)
    if prefetch is None:
        return 0
    checks = checks or [None] * len(configs)
    return prefetch([r for cfg, c in zip(configs, checks) for r in first_requests(cfg, backend, c)])
