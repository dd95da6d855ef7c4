"""The job loop: attempt rounds and storing — nothing else.

Attempts (§3.2): an experiment gets up to :func:`mip.experiment.keys.attempts_allowed` attempts, the
first valid one counts and all are recorded. Each attempt is kept the moment it lands: a
final one (valid, or the last allowed) in the experiment's record, an earlier invalid one
under the store's ``.attempts/`` folder. A rerun after a kill, an OOM or a SLURM requeue
carries on from the attempts already paid, so none is paid twice and no experiment gets
more than the limit. How an attempt is made is the strategy's business
(:mod:`mip.strategies`).

Before each request goes out the loop checks that this job still holds the experiment
(:meth:`mip.store.claims.Claim.holds`): one whose claim went to another job is left to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections import Counter
from pathlib import Path

from mip.experiment import scoring
from mip.experiment.spend import usage_cost
from mip.job.expected_cost import reported_so_far
from mip.job.spend_cap import Cap
from mip.store.claims import Claim
from mip.config import Config
from mip.config.masking import masker
from mip.experiment.planning import Planned
from mip.job import collector
from mip.job.provenance import GitState
from mip.job.stop import Drain, Stopped
from mip.job.job_summary import JobSummary, StoreError
from mip.job.tokens import context_for, counted, overflows
from mip.experiment.keys import attempts_allowed
from mip.models import Backend, Completion, Request
from mip.models.calls import CallStats, call_with_retries
from mip.tracking import progress
from mip.tracking.in_flight import Heartbeat, InFlight
from mip.tracking.progress import Progress
from mip.experiment.records import Attempt
from mip.job.stored_record import make_record, record_configs, refused_as_overflow
from mip.store import Store
from mip.strategies import Landed, Strategy
from mip.tracking.tracker import Tracker


class JobLoop:
    """The call loop of one job: attempts in rounds, each stored as it lands."""

    def __init__(self, cfg: Config, strategy: Strategy, backend: Backend, store: Store, tracker: Tracker, git: GitState,
                 summary: JobSummary, claim: Claim, paid: dict[str, list[Attempt]] | None = None,
                 stop: Drain | None = None):
        self.cfg, self.backend, self.store, self.tracker = cfg, backend, store, tracker
        self.git, self.summary, self.claim, self.strategy = git, summary, claim, strategy
        self.stop = stop or Drain()
        """Once a stop is requested nothing new is pulled, and a record being written is finished."""
        self.attempts: dict[str, list[Attempt]] = {k: list(v) for k, v in (paid or {}).items()}
        """The attempts paid so far of each experiment not yet stored (earlier runs' included)."""
        self.allowed = attempts_allowed(cfg)
        self.context = context_for(cfg, backend, generate=self.calls, attempt_log=self.attempts)
        """All the strategy sees of the job."""
        self.verdicts: Counter = Counter()
        self.cap = Cap(cfg.max_cost, reported_so_far(Path(summary.output_dir).resolve().parent, but=summary.output_dir)
                       if cfg.max_cost is not None else 0.0)
        """What the job may still spend (``max_cost``): reached, it sends nothing more."""
        self.waiting = InFlight()
        """The requests sent and not yet answered, which the heartbeat tells of (mip.tracking.in_flight)."""
        self.settled: set[str] = set()
        """Experiments stored by this job, or left to another: the rest of a stopped job's are left unstored."""
        self.record_configs = record_configs(cfg, self.allowed)

    def calls(self, requests: Iterable[Request]) -> Iterator[Completion]:
        """Completions through the one retry wrapper; calls and errors go into the summary,
        the requests waited on into ``waiting`` (the heartbeat's)."""
        stats, sent, back, given_up = CallStats(), [], set(), 0
        mask = masker().model  # a key a server echoes back (in its reply or error) is stored masked
        try:
            for completion in call_with_retries(self.backend, self._sent(requests, sent), self.cfg.infra_retries, stats,
                                                stopping=lambda: self.stop.requested):
                self.waiting.landed(completion.id)
                if len(stats.failed) > given_up:  # given up (a 4xx, another model's reply): no longer waited on
                    self.waiting.forget(stats.failed[given_up:])
                    given_up = len(stats.failed)
                back.add(completion.id)
                completion = mask(completion)
                self.spent(completion)
                yield completion
        except Stopped:  # the stop's wait ended: what was sent and not answered is dropped (a request
            # handed to the backend but held back, at fail fast's gate or for a free slot, was never sent)
            dropped = len(self.backend.reached(set(sent) - back - set(stats.failed)))
            self.summary.dropped += dropped
            self.summary.calls += dropped  # a provider may charge them; the rerun asks them again
            raise
        finally:
            self.waiting.forget(sent)
            self.summary.calls += stats.calls
            self.summary.errors += stats.errors

    def spent(self, completion: Completion) -> None:
        """What the provider reported this call cost (``usage.cost``), added to the job's spend."""
        if (cost := usage_cost(completion.usage)) is not None:
            self.summary.reported_cost_usd = (self.summary.reported_cost_usd or 0.0) + cost
            if self.cap.add(cost) and not self.summary.refused:
                self.summary.refused = self.cap.reached
                self.backend.stop_sending()

    def _sent(self, requests: Iterable[Request], sent: list[str]) -> Iterator[Request]:
        """``requests`` as they go out, their output limits added up in the summary."""
        for request in requests:
            self.summary.max_output_tokens += request.max_tokens
            self.waiting.sent(request.id)
            sent.append(request.id)
            yield request

    # ------------------------------------------------------------------ the rounds
    def run(self, todo: list[Planned]) -> None:
        """Call and keep ``todo``, round after round, the collector tuned for it (:mod:`mip.job.collector`)."""
        desc, interval = f"{self.cfg.model.name}/{self.cfg.pattern.name}", self.cfg.progress_interval_s
        bar = progress.bar(len(todo), desc, "exp", self.cfg.progress, interval)
        with collector.calling(), Heartbeat(bar, self.waiting, interval if self.cfg.progress else 0, desc):
            self._rounds(todo, bar)

    def _rounds(self, todo: list[Planned], bar: Progress) -> None:
        try:
            live: Iterable[tuple[Planned, int]] = self._open(counted(self.backend, todo, self.summary,
                                                                     self.cfg.model.chars_per_token), bar)
            while True:
                made: list[tuple[Planned, int]] = []
                landed: set[str] = set()
                for result in self.strategy.attempts(self.context, self._held(live, made)):
                    landed.add(result.plan.key)
                    with self.stop.shielded():  # a stop waits until the attempt is kept
                        self._land(result, bar)
                # An experiment that made this round without an attempt landing failed for good
                # (infrastructure): it is left unstored, its paid attempts kept for a rerun.
                failed = [p for p, _ in made if p.key not in landed]
                self.summary.unstored += len(failed)
                for plan in failed:
                    self.attempts.pop(plan.key, None)
                live = [(p, n) for p, n in made if p.key in self.attempts]
                if not live or self.stop.requested:
                    break
        finally:
            bar.close()
            if self.stop.requested:  # what the stop kept from being stored is left for the rerun, whatever its state
                self.summary.unstored = len({p.key for p in todo} - self.settled)
            self.summary.verdicts = dict(self.verdicts)
            with self.stop.shielded():
                try:
                    self.store.flush()  # what this job stored is on disk before it says so
                except OSError as e:
                    raise self._store_error(e) from e

    def _open(self, plans: Iterable[tuple[Planned, int]], bar: Progress) -> Iterator[tuple[Planned, int]]:
        """The experiments still to call. One that does not fit the context window is stored
        as input_overflow, where the strategy sends its prompt whole (``Strategy.whole_prompt``); one whose paid
        attempts already hold its verdict (a job killed before storing it) is stored from them."""
        whole = self.strategy.whole_prompt
        for plan, n_tokens in plans:
            paid = self.attempts.get(plan.key, [])
            if paid and (self._final(paid)):
                with self.stop.shielded():
                    self._store(plan, n_tokens, self.attempts.pop(plan.key), bar)
            elif whole and overflows(n_tokens, self.cfg.model.context_window):
                with self.stop.shielded():
                    self._store(plan, n_tokens, [], bar)
            else:
                yield plan, n_tokens

    def _held(self, live: Iterable[tuple[Planned, int]], made: list) -> Iterator[tuple[Planned, int]]:
        """``live`` as the strategy pulls it, less what this job no longer holds; each pulled
        experiment is noted in ``made``."""
        for plan, n_tokens in live:
            if self.stop.requested:  # a stopping job sends nothing new
                return
            if not self.claim.holds(plan.key):
                self.summary.left_to_other_jobs += 1
                self.settled.add(plan.key)
                self.attempts.pop(plan.key, None)
                continue
            made.append((plan, n_tokens))
            self.attempts.setdefault(plan.key, [])
            yield plan, n_tokens

    def _final(self, attempts: list[Attempt]) -> bool:
        last = attempts[-1]
        # A server refuses a prompt too long for its window again, word for word, where the request is
        # fixed before any call (``Strategy.ahead``): final, as App. D.1's input_overflow makes no attempt.
        refused = self.strategy.ahead and any(stage.context_refusal for stage in last.stages)
        return last.verdict.valid or refused or len(attempts) >= self.allowed

    def _land(self, result: Landed, bar: Progress) -> None:
        """Keep one attempt: in the record when it is final, else under ``.attempts/``."""
        plan = result.plan
        attempts = self.attempts.setdefault(plan.key, [])
        attempts.append(refused_as_overflow(result.attempt))
        if self._final(attempts):
            self._store(plan, result.prompt_tokens, self.attempts.pop(plan.key), bar, result.predictions)
            return
        try:
            self.store.put_attempt(plan.experiment.model, plan.experiment.task, plan.key, result.attempt)
        except OSError as e:
            raise self._store_error(e) from e

    def _store(self, plan: Planned, n_tokens: int, attempts: list[Attempt], bar: Progress,
               predictions: list[str | None] | None = None) -> None:
        record, prompt = make_record(plan, n_tokens, attempts, self.strategy, self.allowed,
                                     self.record_configs[plan.experiment.task],
                                     self.git, predictions)
        try:
            self.store.put(record)
        except OSError as e:  # disk full, read-only, no such folder: stop; what is stored stays readable
            raise self._store_error(e) from e
        self.tracker.log_record(record, prompt)
        plan.release()
        bar.update(1)
        self.summary.stored_now += 1
        self.settled.add(plan.key)
        self.verdicts[scoring.outcome(record.verdict, record.invalid_kind)] += 1

    def _store_error(self, e: OSError) -> StoreError:
        return StoreError(
            f"Cannot write records to {self.store.root} ({e.strerror or e}). The records already written there are "
            "complete and readable; free space or point paths.results_dir at a writable folder, then rerun the "
            "same command to finish."
        )

