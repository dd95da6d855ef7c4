"""One job, top to bottom: check the settings, plan, see what is stored, claim the rest,
call, and write the manifest.

>>> from mip.job import run_job
>>> summary = run_job(cfg, output_dir="results/runs/demo")   # doctest: +SKIP

A record counts as stored only when it reads back valid (a damaged one is quarantined and
asked again, :mod:`mip.store`); attempts a killed run paid for are carried on from
(:mod:`mip.job.loop`); experiments another running job holds are left to it
(:mod:`mip.claims`). Infrastructure errors are retried and then left unstored for a
rerun — never scored.

Exercised by ``pytest tests/test_runner.py tests/test_store_trust.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from mip import prompts
from mip.claims import Claim, ClaimError, claim_experiments
from mip.config import Config
from mip.data import Pool, build_pool
from mip.data.pools import load_pool
from mip.data.sources import LOADERS, LOCAL_ONLY
from mip.experiments import Planned, plan_job
from mip.instances import split_counts
from mip.job.loop import JobLoop
from mip.job.provenance import git_commit, write_manifest
from mip.job.summary import JobSummary, StoreError
from mip.job.tokens import OfflineTokenizer, budget_error, counted, overflows
from mip.models import Backend, backend_class, build_backend, check_schema
from mip.records import Attempt
from mip.store import Store
from mip.strategies import strategy_for
from mip.tracking import build_tracker


def validate(cfg: Config) -> None:
    """Refuse a job whose settings cannot work, before any data is read or model loaded."""
    check_schema(cfg.model)
    split_counts(cfg.n, cfg.p)
    if cfg.pattern.name == "random" and not cfg.order_seeds:
        raise ValueError("order_seeds is empty, so pattern random would run nothing; give its order seeds, "
                         "e.g. order_seeds=[0,1,2].")
    if cfg.max_attempts < 1 or cfg.infra_retries < 0:
        raise ValueError("max_attempts must be at least 1 and infra_retries at least 0.")
    if cfg.budget.max_tokens < 1:
        raise ValueError(f"budget.max_tokens must be positive, got {cfg.budget.max_tokens}.")
    too_big = budget_error(cfg.model.name, cfg.model.context_window, cfg.budget.name, cfg.budget.max_tokens)
    if too_big:  # a dry run too: it must say what the real run would say, not count a grid that cannot run
        raise ValueError(too_big)
    split = cfg.model.reserved_answer_tokens
    if split is not None and not 0 < split < cfg.budget.max_tokens:
        raise ValueError(f"{cfg.model.name}: budget_split.answer_tokens={split} must lie between 0 and the budget.")
    if cfg.prompt_variant.name not in prompts.VARIANTS:
        raise ValueError(f"Unknown prompt variant {cfg.prompt_variant.name!r}; choose one of {', '.join(prompts.VARIANTS)}.")
    strategy_for(cfg)  # an unknown strategy, or settings it cannot run, are refused here
    for task in cfg.task.values():
        if len(task.labels) != 2 or task.labels[0] == task.labels[1]:
            raise ValueError(f"Task {task.name!r} needs exactly two distinct labels, got {task.labels}.")
        if cfg.data_dir is None and task.source.loader in LOCAL_ONLY:  # no hub copy (wsd): says to set data_dir
            LOADERS[task.source.loader](task, None)


def load_pools(cfg: Config) -> dict[str, Pool]:
    """Each task's pool: the filtered one (App. C.1) where filter.py built it and
    ``use_filtered`` is on, else the unfiltered pool."""
    if not cfg.task:
        raise ValueError("No task selected: use task=<name> or the default task=all.")
    pools = {}
    for name, task in cfg.task.items():
        pool = build_pool(task, cfg.data_dir, cfg.paths.cache_dir)
        path = Path(cfg.paths.results_dir).expanduser() / "pools" / name / f"filtered-{pool.version}.json"
        if cfg.use_filtered and path.is_file():
            filtered = load_pool(path)
            if filtered is None:
                raise ValueError(f"The filtered pool {path} is damaged; rebuild it with filter.py or pass use_filtered=false.")
            pool = filtered
        pools[name] = pool
    return pools


class _Stored:
    """The job's experiments that are stored and read back valid, checked once each; a
    later listing (under the claims lock) checks only what appeared since."""

    def __init__(self, store: Store, model: str, plans: list[Planned]):
        self.store, self.model = store, model
        self.wanted: dict[str, set[str]] = {}
        for p in plans:
            self.wanted.setdefault(p.experiment.task, set()).add(p.key)
        self.valid: set[str] = set()
        self.checked: set[str] = set()

    def __call__(self) -> set[str]:
        for task, wanted in self.wanted.items():
            new = (self.store.keys(self.model, task) & wanted) - self.checked
            self.valid |= {k for k in new if self.store.load(self.model, task, k) is not None}
            self.checked |= new
        return set(self.valid)


def pending(cfg: Config, store: Store, pools: dict[str, Pool]) -> tuple[list[Planned], _Stored, list[Planned]]:
    """The job's plans, what of them is stored (read back valid) and what is still to call."""
    plans = plan_job(cfg, pools)
    stored = _Stored(store, cfg.model.name, plans)
    valid = stored()
    return plans, stored, [p for p in plans if p.key not in valid]


def run_job(cfg: Config, output_dir: str | Path, backend: Backend | None = None) -> JobSummary:
    """Run (or, with ``dry_run``, count) one job and write its manifest to ``output_dir``."""
    validate(cfg)
    output_dir = Path(output_dir)
    _writable(output_dir, Path(cfg.paths.store_dir).expanduser())
    git = git_commit()
    pools = load_pools(cfg)
    for pool in pools.values():
        print(pool.summary(), file=sys.stderr)
    store = Store(cfg.paths.store_dir)
    plans, stored_keys, todo = pending(cfg, store, pools)
    stored = set(stored_keys.valid)  # as the job found it, before it claims
    summary = JobSummary(
        output_dir=str(output_dir), store_dir=str(store.root), experiments=len(plans),
        already_stored=len(plans) - len(todo), stored_now=0, unstored=0, calls=0, dry_run=cfg.dry_run,
        model=cfg.model.name, price_input_per_mtok=cfg.model.price_input_per_mtok,
        price_output_per_mtok=cfg.model.price_output_per_mtok, max_output_tokens=len(todo) * _budget_each(cfg),
        backend=cfg.model.backend, cost_basis=backend_class(cfg.model.backend).cost_basis, device=cfg.model.runs_on,
        prompt_tokens_per_s=cfg.model.prompt_tokens_per_s, output_tokens_per_s=cfg.model.output_tokens_per_s,
        keys=[p.key for p in plans],
    )
    write_manifest(output_dir, cfg, git, summary)
    if cfg.dry_run:  # no backend is built: no key, no vLLM, no GPU needed
        _dry_run(cfg, todo, summary, backend or OfflineTokenizer(cfg.model, cfg.paths.cache_dir))
        write_manifest(output_dir, cfg, git, summary)
        return summary
    backend = backend or build_backend(cfg.model, cfg.paths.cache_dir)

    claim = _claim(store, cfg, todo, stored_keys, output_dir) if todo else Claim(None, frozenset())
    try:
        if len(claim.keys) < len(todo):
            todo = _left_to_others(todo, claim, summary, cfg)
        paid = _paid_attempts(store, cfg, todo, summary)
        if todo:
            backend.check()
        tracker = build_tracker(cfg, output_dir)
        if tracker.mirrors:  # the tracker shows the whole job, also what an earlier run stored
            for plan in plans:
                if plan.key in stored and (record := store.get(cfg.model.name, plan.experiment.task, plan.key)):
                    tracker.log_record(record, plan.prompt)
                    plan.release()
        try:
            JobLoop(cfg, backend, store, tracker, git, summary, claim, paid).run(todo)
        finally:  # connections and weights are released also when the store fails mid-job
            backend.close()
    finally:  # what this job did not store is free for the next one, also after an error
        claim.release()
    if claim.lost:
        print(f"{len(claim.lost)} experiment(s) were left to another job after this job's claim file was removed.",
              file=sys.stderr)
    tracker.finish(summary)
    write_manifest(output_dir, cfg, git, summary)
    return summary


def _dry_run(cfg: Config, todo: list[Planned], summary: JobSummary, counter: Backend | OfflineTokenizer) -> None:
    """Count what the job would send: prompt tokens, the prompts that would overflow the
    context window (input_overflow verdicts to come, never sent: their tokens are kept apart
    so that cost and time count only what is sent), output tokens at most."""
    whole = strategy_for(cfg).whole_prompt
    for plan, n_tokens in counted(counter, todo, summary, cfg.model.chars_per_token):
        task = summary.per_task.setdefault(plan.experiment.task, dict.fromkeys(
            ("experiments", "prompt_tokens", "overflowing", "max_output_tokens"), 0))
        task["experiments"] += 1
        task["prompt_tokens"] += n_tokens
        if whole and overflows(n_tokens, cfg.model.context_window):
            task["overflowing"] += 1
            summary.overflow_prompt_tokens += n_tokens
        else:
            task["max_output_tokens"] += _budget_each(cfg)
        plan.release()
    summary.overflowing = sum(t["overflowing"] for t in summary.per_task.values())
    summary.max_output_tokens = sum(t["max_output_tokens"] for t in summary.per_task.values())
    summary.tokens_from = getattr(counter, "source", "") if not summary.tokens_estimated else \
        f"estimated from characters ({cfg.model.chars_per_token:g} per token)"


def _writable(*folders: Path) -> None:
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"Cannot create {e.filename or folder}: {e.strerror or e}. Point paths.results_dir at a "
                             "writable folder.") from e


def _budget_each(cfg: Config) -> int:
    """Output tokens one experiment may use at most (self-prompting makes two calls)."""
    return cfg.budget.max_tokens * (2 if cfg.prompt_variant.name == "self_prompt" else 1)


def _claim(store: Store, cfg: Config, todo: list[Planned], stored_keys: Callable[[], set[str]], output_dir: Path) -> Claim:
    """This job's claim on the experiments it is about to call (see :mod:`mip.claims`)."""
    try:
        return claim_experiments(store.root, cfg.model.name, [p.key for p in todo], stored_keys, output_dir)
    except OSError as e:
        raise StoreError(f"Cannot claim experiments in {store.root} ({e.strerror or e}). Point paths.results_dir at a "
                         "writable folder.") from e
    except ClaimError as e:
        raise StoreError(str(e)) from None


def _left_to_others(todo: list[Planned], claim: Claim, summary: JobSummary, cfg: Config) -> list[Planned]:
    """The experiments this job claimed; those another job stored meanwhile count as stored,
    those another running job holds are left to it, and the job says so."""
    mine = [p for p in todo if p.key in claim.keys]
    held = [p for p in todo if p.key in claim.elsewhere]
    summary.already_stored += len(todo) - len(mine) - len(held)
    summary.left_to_other_jobs = len(held)
    summary.max_output_tokens = len(mine) * _budget_each(cfg)
    if held:
        holders = list(dict.fromkeys(str(claim.elsewhere[p.key]) for p in held))
        print(f"{len(held)} experiment(s) of this job are being run by another job ({'; '.join(holders[:3])}"
              f"{' …' if len(holders) > 3 else ''}); they are left to it. Run the same command again after it ends "
              "to pick up any it leaves unstored.", file=sys.stderr)
    return mine


def _paid_attempts(store: Store, cfg: Config, todo: list[Planned], summary: JobSummary) -> dict[str, list[Attempt]]:
    """The attempts earlier runs paid for the experiments about to be called."""
    by_task: dict[str, set[str]] = {}
    for p in todo:
        by_task.setdefault(p.experiment.task, set()).add(p.key)
    paid: dict[str, list[Attempt]] = {}
    for task, keys in by_task.items():
        paid.update(store.attempts(cfg.model.name, task, keys))
    summary.resumed_attempts = sum(map(len, paid.values()))
    if paid:
        print(f"Carrying on from {summary.resumed_attempts} attempt(s) an earlier run paid for "
              f"({len(paid)} experiment(s)).", file=sys.stderr)
    return paid
