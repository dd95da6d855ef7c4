"""One job, top to bottom: check the settings, plan, see what is stored, claim the rest,
call, and write the manifest.

>>> from mip.job import run_job
>>> summary = run_job(cfg, output_dir="results/runs/demo")   # doctest: +SKIP

A record counts as stored only when it reads back valid (a damaged one is quarantined and
asked again, :mod:`mip.store`); attempts a killed run paid for are carried on from
(:mod:`mip.job.loop`); experiments another running job holds are left to it
(:mod:`mip.store.claims`). Infrastructure errors are retried and then left unstored for a
rerun — never scored.

Exercised by ``pytest tests/test_runner.py tests/test_store_trust.py``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mip.store.claims import Claim, ClaimError, claim_experiments
from mip.config import Config
from mip.config.masking import remember
from mip.config.redact import secret_values
from mip.data import Pool
from mip.data.files import unwritable
from mip.experiment.planning import Planned, plan_job
from mip.job.checks import CheckedJob, check_job
from mip.job.dry_run import dry_run
from mip.job.expected_cost import expected_usd, reported_so_far
from mip.job.spend_cap import SpendRefused, refusal
from mip.job import measured
from mip.job.loop import JobLoop
from mip.job.notices import first_time
from mip.job.provenance import GitState, git_commit, write_manifest
from mip.job.stop import Drain, JobStopped, Stopped
from mip.job.task_changes import unsourced
from mip.job.job_summary import JobSummary, StoreError
from mip.job.tokens import OfflineTokenizer
from mip.models import Backend, backend_class, build_backend, fail_fast, sweep_gate
from mip.experiment.records import Attempt
from mip.store import Store
from mip.strategies import Strategy
from mip.tracking.tracker import Tracker, build_tracker


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
            self.valid |= self.store.valid_keys(self.model, task, new)  # the damaged moved aside, said per folder
            self.checked |= new
        return set(self.valid)


def pending(cfg: Config, store: Store, pools: dict[str, Pool],
            strategy: Strategy | None = None) -> tuple[list[Planned], _Stored, list[Planned]]:
    """The job's plans, what of them is stored (read back valid) and what is still to call."""
    plans = plan_job(cfg, pools, strategy)
    stored = _Stored(store, cfg.model.name, plans)
    valid = stored()
    return plans, stored, [p for p in plans if p.key not in valid]


def run_job(cfg: Config, output_dir: str | Path, backend: Backend | None = None,
            checked: CheckedJob | None = None) -> JobSummary:
    """Run (or, with ``dry_run``, count) one job and write its manifest to ``output_dir``;
    ``checked``: what :func:`mip.job.checks.check_job` built for ``cfg``, where the caller
    has it (else it is asked here, once)."""
    started = time.monotonic()
    remember(secret_values(dataclasses.asdict(cfg)))  # masked wherever written or printed (mip.config.masking)
    checked = check_job(cfg, builds_backend=backend is None) if checked is None else checked
    strategy, pools = checked.strategy, checked.pools
    output_dir = Path(output_dir)
    new_store = not Path(cfg.paths.store_dir).expanduser().exists()  # made below: no job ran there
    _writable(output_dir, *(() if cfg.dry_run else (Path(cfg.paths.store_dir).expanduser(),)))
    git = git_commit()
    _say_pools(pools, output_dir, unsourced(cfg))
    store = Store(cfg.paths.store_dir, readonly=cfg.dry_run)  # a dry run reads the store, and moves nothing
    plans, stored_keys, todo = pending(cfg, store, pools, strategy)
    stored = set(stored_keys.valid)  # as the job found it, before it claims
    summary = _summary(cfg, output_dir, store, plans, todo)
    if todo and not cfg.dry_run and not _in_sweep(output_dir):  # a sweep's is asked before it launches
        _spend_gate(cfg, checked, output_dir)
    write_manifest(output_dir, cfg, git, summary)
    if cfg.dry_run:  # no backend is built: no key, no vLLM, no GPU needed
        _dry_run_inputs(cfg, summary, output_dir)
        counter = backend or OfflineTokenizer(cfg.model, cfg.paths.cache_dir, said_in=output_dir.resolve().parent)
        dry_run(cfg, strategy, todo, summary, counter, _paid_attempts(store, cfg, todo, summary))
        write_manifest(output_dir, cfg, git, summary)
        return summary
    if todo:  # a sweep that reported spending max_cost already: this job sends nothing
        _spent_already(cfg, output_dir, summary, git)
    backend = backend or build_backend(cfg.model, cfg.paths.cache_dir)
    policy = getattr(backend, "fail_fast", None)  # a test's stand-in backend may have none
    first_reply = None  # this job's hold on the model's first reply in a sweep (mip.models.sweep_gate)
    if policy is not None and todo:  # an earlier job of the sweep stopped this model: send nothing
        try:
            sweep_gate.resume(policy, output_dir)
            first_reply = sweep_gate.hold(policy, output_dir)  # parallel jobs: one sends until a reply settles it
        except fail_fast.ProviderRefused as e:
            summary.unstored, summary.refused = len(todo), str(e)
            write_manifest(output_dir, cfg, git, summary)
            raise
    try:
        backend.prepare(pools)
        claim = _claim(store, cfg, todo, stored_keys, output_dir, new_store) if todo else Claim(None, frozenset())
        with Drain(cfg.stop_grace_s) as stop:
            tracker = _call(cfg, strategy, backend, store, plans, stored, todo, claim, summary, output_dir, git, stop)
            stop.finished()
            if stop.requested:
                summary.stopped_by = stop.received[0].name
            if tracker is not None:
                tracker.finish(summary)
                summary.wandb_offline_run = str(tracker.offline_dir or "")
            summary.elapsed_s = round(time.monotonic() - started, 3)
            summary.refused = (policy.tripped if policy is not None else None) or summary.refused
            write_manifest(output_dir, cfg, git, summary)
        _after(policy, todo, summary, output_dir, stop)
        return summary
    finally:
        if first_reply is not None:  # a job that ended before a reply settled the model: the next may try
            first_reply.release()


def _after(policy: fail_fast.FailFast | None, todo: list[Planned], summary: JobSummary, output_dir: Path,
           stop: Drain) -> None:
    """Once the calls are over: the sweep's later jobs of the model go on from what this one
    learnt; a job stopped (refusals, ``max_cost``, a signal) raises what to print."""
    if policy is not None and todo:  # the sweep's later jobs of this model go on from here
        sweep_gate.keep(policy, output_dir)
        if policy.tripped:  # stopped after refusals no retry mends
            raise fail_fast.ProviderRefused(f"{policy.tripped} ({summary.stored_now} stored now; the "
                                            f"manifest is in {output_dir})")
    if summary.refused:  # max_cost reached (mip.job.spend_cap)
        raise fail_fast.ProviderRefused(f"{summary.refused} ({summary.stored_now} stored now; the manifest is in "
                                        f"{output_dir})")
    if stop.requested:
        raise JobStopped(f"stopped by {summary.stopped_by}{' after the grace period' if stop.expired else ''}: "
                         f"{summary.stored_now} stored now, {summary.unstored} left unstored"
                         f"{f' ({summary.dropped} request(s) in flight dropped)' if summary.dropped else ''}; "
                         f"the manifest is in {output_dir}. Run the same command again to carry on.", stop)


def _in_sweep(output_dir: Path) -> bool:
    return (output_dir.resolve().parent / "multirun.yaml").exists()


def _spend_gate(cfg: Config, checked: CheckedJob, output_dir: Path) -> None:
    """A single run expected to cost more than ``max_cost`` (or, uncapped, than ``confirm_cost_above``
    without a yes) is refused before anything is sent (:mod:`mip.job.spend_cap`)."""
    expected = expected_usd(cfg, checked, said_in=output_dir.resolve().parent)
    if expected is not None and (why := refusal(expected, cfg.max_cost, cfg.confirm_cost_above, cfg.yes, "run")):
        raise SpendRefused(why)


def _spent_already(cfg: Config, output_dir: Path, summary: JobSummary, git: GitState) -> None:
    """A sweep's job whose sweep has reported spending ``max_cost`` already sends nothing."""
    if cfg.max_cost is None or cfg.dry_run or not _in_sweep(output_dir):
        return
    spent = reported_so_far(output_dir.resolve().parent, but=output_dir)
    if spent >= cfg.max_cost:
        summary.unstored = len(summary.keys) - summary.already_stored
        summary.refused = (f"max_cost reached: the sweep's jobs reported ${spent:,.4f} spent, at or over "
                           f"max_cost={cfg.max_cost:g}; raise max_cost and run the same command again to carry on")
        write_manifest(output_dir, cfg, git, summary)
        raise fail_fast.ProviderRefused(f"{summary.refused}; this job sent nothing", skipped=True)


def _summary(cfg: Config, output_dir: Path, store: Store, plans: list[Planned], todo: list[Planned]) -> JobSummary:
    """The job's manifest as it starts: its slice, the limits and prices it runs at, its keys."""
    return JobSummary(
        output_dir=str(output_dir), store_dir=str(store.root), experiments=len(plans),
        already_stored=len(plans) - len(todo), stored_now=0, unstored=0, calls=0, dry_run=cfg.dry_run,
        model=cfg.model.name, budget=cfg.budget.name, prompt_variant=cfg.prompt_variant.name,
        strategy=cfg.strategy.name, budget_tokens=cfg.budget.max_tokens, budget_stated=cfg.budget.stated_tokens,
        budget_answer=getattr(cfg.model, "reserved_answer_tokens", None),
        price_input_per_mtok=cfg.model.price_input_per_mtok, price_output_per_mtok=cfg.model.price_output_per_mtok,
        backend=cfg.model.backend, cost_basis=backend_class(cfg.model.backend).cost_basis, device=cfg.model.runs_on,
        prompt_tokens_per_s=cfg.model.prompt_tokens_per_s, output_tokens_per_s=cfg.model.output_tokens_per_s,
        keys=[p.key for p in plans],
    )


def _dry_run_inputs(cfg: Config, summary: JobSummary, output_dir: Path) -> None:
    """The preflight's price and characters a token where the config has none
    (:mod:`mip.job.measured`), and what the backend says of how it sends (vllm: its chunk)."""
    measured.fill_in(cfg, summary)
    note = backend_class(cfg.model.backend).dry_run_note(cfg.model, cfg.budget.max_tokens)
    if note and first_time(output_dir.resolve().parent, note):
        print(note, file=sys.stderr)


def _call(cfg: Config, strategy: Strategy, backend: Backend, store: Store, plans: list[Planned], stored: set[str],
          todo: list[Planned], claim: Claim, summary: JobSummary, output_dir: Path, git: GitState,
          stop: Drain) -> Tracker | None:
    """Call and store what ``claim`` holds; returns the tracker (None if a stop came before it
    was made). A stop (:mod:`mip.job.stop`) ends the calls early."""
    tracker = None
    try:
        if len(claim.keys) < len(todo):
            todo = _left_to_others(todo, claim, summary)
        paid = _paid_attempts(store, cfg, todo, summary)
        if todo:
            backend.check()
        try:
            if todo:
                backend.warm()  # its client opens while the claim settles
            tracker = build_tracker(cfg, output_dir)
            if tracker.mirrors:  # the tracker shows the whole job, also what an earlier run stored
                for plan in plans:
                    if plan.key in stored and (record := store.get(cfg.model.name, plan.experiment.task, plan.key)):
                        tracker.log_record(record, plan.prompt)
                        plan.release()
            stop.on_stop.append(backend.stop_sending)
            JobLoop(cfg, strategy, backend, store, tracker, git, summary, claim, paid, stop).run(todo)
        finally:  # connections and weights are released also when the store fails mid-job
            backend.close()
    except Stopped:  # a second signal, or the grace period ran out: what is stored stays
        pass
    finally:  # what this job did not store is free for the next one, also after an error
        claim.release()
        store.close()
    if claim.lost:
        print(f"{len(claim.lost)} experiment(s) were left to an older running job that claims them too (a claim file "
              "had been removed).", file=sys.stderr)
    return tracker


def _say_pools(pools: dict[str, Pool], output_dir: Path, warning: str | None) -> None:
    """Describe each pool, and say ``warning``, once per folder of jobs (a sweep's jobs share their pools)."""
    for said in [*(pool.summary() for pool in pools.values()), *([warning] if warning else [])]:
        if first_time(output_dir.resolve().parent, said):
            print(said, file=sys.stderr)


def _writable(*folders: Path) -> None:
    """Refuse a job folder or store that cannot be written (read-only, full), before the job
    reads the store: a damaged record found there is moved aside, which needs a writable store."""
    for folder in folders:
        why = unwritable(folder)
        if why:
            raise StoreError(f"Cannot write to {folder} ({why}). Free space, or point paths.results_dir (or "
                             "paths.store_dir) at a writable folder; nothing was written there.")


def _claim(store: Store, cfg: Config, todo: list[Planned], stored_keys: Callable[[], set[str]], output_dir: Path,
           new_store: bool) -> Claim:
    """This job's claim on the experiments it is about to call (see :mod:`mip.store.claims`)."""
    try:
        return claim_experiments(store.root, cfg.model.name, [p.key for p in todo], stored_keys, output_dir, new_store)
    except OSError as e:
        raise StoreError(f"Cannot claim experiments in {store.root} ({e.strerror or e}). Point paths.results_dir at a "
                         "writable folder.") from e
    except ClaimError as e:
        raise StoreError(str(e)) from None


def _left_to_others(todo: list[Planned], claim: Claim, summary: JobSummary) -> list[Planned]:
    """The experiments this job claimed; those another job stored meanwhile count as stored,
    those another running job holds are left to it, and the job says so."""
    mine = [p for p in todo if p.key in claim.keys]
    held = [p for p in todo if p.key in claim.elsewhere]
    summary.already_stored += len(todo) - len(mine) - len(held)
    summary.left_to_other_jobs = len(held)
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
