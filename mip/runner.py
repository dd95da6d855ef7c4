"""A job: expand experiments, skip those already stored, call, score, store, log.

>>> from mip.runner import run_job
>>> summary = run_job(cfg, output_dir="results/runs/demo")   # doctest: +SKIP

Each experiment is stored the moment its verdict is final, so a job killed at any
point loses only the calls in flight; the same command again calls nothing for what is
stored. Attempts (§3.2): up to ``max_attempts`` per experiment, the first valid one
counts and all are recorded; a deterministic backend (greedy local decoding) would
return the same text again, so it gets one. Infrastructure errors are retried
``infra_retries`` times and then left unstored for a rerun — never scored.

Exercised by ``pytest tests/test_runner.py``.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

import mip
from mip import prompts, scoring
from mip.claims import Claim, ClaimError, claim_experiments
from mip.config import Config, to_plain
from mip.data import Pool, build_pool
from mip.data.pools import load_pool
from mip.instances import split_counts
from mip.experiments import Planned, build_prompt, decomposed_prompts, final_prompt, plan_job
from mip.models import Backend, Completion, Request, build_backend
from mip.records import Attempt, Record, Stage, Store
from mip.tracking import Tracker, build_tracker



class StoreError(RuntimeError):
    """The store cannot be written; the message says what to do."""


@dataclass
class JobSummary:
    output_dir: str
    store_dir: str
    experiments: int
    already_stored: int
    stored_now: int
    unstored: int
    calls: int
    verdicts: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    tokens_estimated: bool = False
    dry_run: bool = False
    model: str = ""
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    max_output_tokens: int = 0
    """Output tokens if every experiment still to run used its whole budget (a cost bound)."""
    left_to_other_jobs: int = 0
    """Experiments another running job had claimed: left to it, neither called nor failed here."""
    keys: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.unstored == 0


def git_commit() -> dict[str, str | bool | None]:
    """The commit of the code that runs, and whether the work tree had changes."""
    root = Path(mip.__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def validate(cfg: Config) -> None:
    """Refuse a job whose settings cannot work, before any data is read or model loaded."""
    split_counts(cfg.n, cfg.p)
    if cfg.max_attempts < 1 or cfg.infra_retries < 0:
        raise ValueError("max_attempts must be at least 1 and infra_retries at least 0.")
    if cfg.budget.max_tokens < 1:
        raise ValueError(f"budget.max_tokens must be positive, got {cfg.budget.max_tokens}.")
    if cfg.budget.max_tokens > cfg.model.context_window and not cfg.dry_run:
        raise ValueError(
            f"Budget {cfg.budget.name} ({cfg.budget.max_tokens} output tokens) is larger than the context window of "
            f"{cfg.model.name} ({cfg.model.context_window}); choose a smaller budget (e.g. budget=smoke) or another model."
        )
    split = cfg.model.budget_split.answer_tokens
    if split is not None and not 0 < split < cfg.budget.max_tokens:
        raise ValueError(f"{cfg.model.name}: budget_split.answer_tokens={split} must lie between 0 and the budget.")
    if cfg.prompt_variant.name not in prompts.VARIANTS:
        raise ValueError(f"Unknown prompt variant {cfg.prompt_variant.name!r}; choose one of {', '.join(prompts.VARIANTS)}.")
    if cfg.strategy.name not in ("single_call", "count_report", "decomposed"):
        raise ValueError(f"Unknown strategy {cfg.strategy.name!r}; choose single_call, count_report or decomposed.")
    if cfg.strategy.name != "single_call" and cfg.prompt_variant.name == "self_prompt":
        raise ValueError(f"The {cfg.strategy.name} strategy has its own prompt; use it with prompt_variant=standard.")
    if cfg.strategy.name == "decomposed" and (cfg.prompt_variant.name != "standard" or cfg.strategy.batch_size < 1):
        raise ValueError("The decomposed strategy labels batches with its own prompt: use prompt_variant=standard "
                         "and strategy.batch_size >= 1.")
    for task in cfg.task.values():
        if len(task.labels) != 2 or task.labels[0] == task.labels[1]:
            raise ValueError(f"Task {task.name!r} needs exactly two distinct labels, got {task.labels}.")


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


def run_job(cfg: Config, output_dir: str | Path, backend: Backend | None = None) -> JobSummary:
    """Run (or, with ``dry_run``, count) one job and write its manifest to ``output_dir``."""
    validate(cfg)
    output_dir = Path(output_dir)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        Path(cfg.paths.store_dir).expanduser().mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"Cannot create {e.filename or output_dir}: {e.strerror or e}. Point paths.results_dir at a "
                         "writable folder.") from e
    git = git_commit()
    pools = load_pools(cfg)
    for pool in pools.values():
        print(pool.summary(), file=sys.stderr)
    plans = plan_job(cfg, pools)
    store = Store(cfg.paths.store_dir)

    def stored_keys() -> set[str]:  # experiment keys name their task: one set for all tasks
        return {k for t in cfg.task for k in store.keys(cfg.model.name, t)}

    stored = stored_keys()
    todo = [p for p in plans if p.key not in stored]
    budget_each = cfg.budget.max_tokens * (2 if cfg.prompt_variant.name == "self_prompt" else 1)  # output tokens at most
    backend = backend or build_backend(cfg.model, cfg.paths.cache_dir)
    summary = JobSummary(
        output_dir=str(output_dir),
        store_dir=str(store.root),
        experiments=len(plans),
        already_stored=len(plans) - len(todo),
        stored_now=0,
        unstored=0,
        calls=0,
        dry_run=cfg.dry_run,
        model=cfg.model.name,
        price_input_per_mtok=cfg.model.price_input_per_mtok,
        price_output_per_mtok=cfg.model.price_output_per_mtok,
        max_output_tokens=len(todo) * budget_each,
        keys=[p.key for p in plans],
    )
    _write_manifest(output_dir, cfg, git, summary)
    if cfg.dry_run:
        for plan, _ in counted(backend, todo, summary, cfg.model.chars_per_token):
            plan.release()
        _write_manifest(output_dir, cfg, git, summary)
        return summary

    claim = _claim(store, cfg, todo, stored_keys, output_dir) if todo else Claim(None, frozenset())
    try:
        if len(claim.keys) < len(todo):
            todo = _left_to_others(todo, claim, summary, budget_each)
        if todo:
            backend.check()
        tracker = build_tracker(cfg, output_dir)
        if tracker.mirrors:  # the tracker shows the whole job, also what an earlier run stored
            for plan in plans:
                if plan.key in stored and (record := store.get(cfg.model.name, plan.experiment.task, plan.key)):
                    tracker.log_record(record, plan.prompt)
                    plan.release()
        execution = _Execution(cfg, backend, store, tracker, git, summary)
        try:
            execution.run(todo)
        finally:  # connections and weights are released also when the store fails mid-job
            backend.close()
    finally:  # what this job did not store is free for the next one, also after an error
        claim.release()
    tracker.finish(summary)
    _write_manifest(output_dir, cfg, git, summary)
    return summary


def _claim(store: Store, cfg: Config, todo: list[Planned], stored_keys: Callable[[], set[str]], output_dir: Path) -> Claim:
    """This job's claim on the experiments it is about to call (see :mod:`mip.claims`)."""
    try:
        return claim_experiments(store.root, cfg.model.name, [p.key for p in todo], stored_keys, output_dir)
    except OSError as e:
        raise StoreError(f"Cannot claim experiments in {store.root} ({e.strerror or e}). Point paths.results_dir at a "
                         "writable folder.") from e
    except ClaimError as e:
        raise StoreError(str(e)) from None


def _left_to_others(todo: list[Planned], claim: Claim, summary: JobSummary, budget_each: int) -> list[Planned]:
    """The experiments this job claimed; those another job stored meanwhile count as stored,
    those another running job holds are left to it, and the job says so."""
    mine = [p for p in todo if p.key in claim.keys]
    held = [p for p in todo if p.key in claim.elsewhere]
    summary.already_stored += len(todo) - len(mine) - len(held)
    summary.left_to_other_jobs = len(held)
    summary.max_output_tokens = len(mine) * budget_each
    if held:
        holders = list(dict.fromkeys(str(claim.elsewhere[p.key]) for p in held))
        print(f"{len(held)} experiment(s) of this job are being run by another job ({'; '.join(holders[:3])}"
              f"{' …' if len(holders) > 3 else ''}); they are left to it. Run the same command again after it ends "
              "to pick up any it leaves unstored.", file=sys.stderr)
    return mine


def estimate_tokens(text: str, chars_per_token: float) -> int:
    """Prompt tokens from characters, for models whose tokenizer is not at hand."""
    return int(len(text) / chars_per_token) + 1


def counted(backend: Backend, plans: Iterable[Planned], summary: JobSummary, chars_per_token: float,
            chunk: int = 16) -> Iterator[tuple[Planned, int]]:
    """Each plan with its prompt tokens (for self-prompting, of its instances alone), counted
    a few at a time as they are needed: with the model's tokenizer or the server's where the
    backend has one, else estimated from characters. Adds them up in ``summary``."""
    source = iter(plans)
    while group := list(itertools.islice(source, chunk)):
        texts = [p.prompt if p.prompt is not None else prompts.instance_block(p.texts) for p in group]
        try:
            tokens = backend.count_tokens(texts)
        except (ImportError, OSError) as e:
            if not summary.tokens_estimated:
                print(f"No tokenizer at hand ({e}); prompt tokens are estimated from characters.", file=sys.stderr)
            tokens = None
        if tokens is None:
            summary.tokens_estimated = True
            tokens = [estimate_tokens(text, chars_per_token) for text in texts]
        summary.prompt_tokens += sum(tokens)
        yield from zip(group, tokens)


def _write_manifest(output_dir: Path, cfg: Config, git: dict, summary: JobSummary) -> None:
    """The job's output folder: resolved config, git commit and what the job covered."""
    import dataclasses

    import yaml

    config_file = output_dir / "config.yaml"
    if not config_file.exists():  # the config does not change during the job
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml where PyYAML has it: ~10x faster
        config_file.write_text(yaml.dump(dataclasses.asdict(cfg), Dumper=dumper, sort_keys=False, allow_unicode=True),
                               encoding="utf-8")
    payload = {"git": git, "mip_version": mip.__version__, "written_at": _now(), **summary.__dict__}
    (output_dir / "job.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class _Execution:
    """The call loop of one job: attempts in rounds, stages in order, store as results land."""

    def __init__(self, cfg: Config, backend: Backend, store: Store, tracker: Tracker, git: dict, summary: JobSummary):
        self.cfg, self.backend, self.store, self.tracker, self.git, self.summary = cfg, backend, store, tracker, git, summary
        self.attempts: dict[str, list[Attempt]] = {}
        self.verdicts: Counter = Counter()
        self.max_attempts = 1 if backend.deterministic else cfg.max_attempts
        # A reserved answer budget (App. C.2) forces an answer after a length stop: parse it.
        self.forced_answer_ok = cfg.model.budget_split.answer_tokens is not None

    @functools.cached_property
    def record_config(self) -> dict:
        """The config every record of the job carries (secrets redacted)."""
        cfg = self.cfg
        return {
            "model": to_plain(cfg.model),
            "budget": to_plain(cfg.budget),
            "prompt_variant": cfg.prompt_variant.name,
            "strategy": to_plain(cfg.strategy),
            "setting": cfg.setting,
            "max_attempts": cfg.max_attempts,
            "attempts_made_at_most": self.max_attempts,
            "data_dir": cfg.data_dir,
        }

    # ------------------------------------------------------------------ main loop
    def run(self, todo: list[Planned]) -> None:
        decomposed = self.cfg.strategy.name == "decomposed"
        bar = tqdm(total=len(todo), desc=f"{self.cfg.model.name}/{self.cfg.pattern.name}", unit="exp",
                   disable=not self.cfg.progress, file=sys.stderr)
        live = self._fitting(counted(self.backend, todo, self.summary, self.cfg.model.chars_per_token), bar)
        if decomposed:
            self._decomposed(list(live), bar)
        for index in range(0 if decomposed else self.max_attempts):
            live = self._attempt_round(index, live, bar)
            if not live:
                break
        bar.close()
        self.summary.verdicts = dict(self.verdicts)

    def _fitting(self, plans: Iterable[tuple[Planned, int]], bar: tqdm) -> Iterator[tuple[Planned, int]]:
        """The experiments whose prompt fits the context window; the others are stored as
        input_overflow on the way (decomposed batches are checked one by one instead)."""
        for plan, n_tokens in plans:
            if n_tokens >= self.cfg.model.context_window and self.cfg.strategy.name != "decomposed":
                self._store(plan, n_tokens, [], scoring.INPUT_OVERFLOW)
                bar.update(1)
            else:
                yield plan, n_tokens

    def _attempt_round(self, index: int, live: Iterable[tuple[Planned, int]], bar: tqdm) -> list[tuple[Planned, int]]:
        """One attempt for every live experiment; returns those that need another.

        Requests are made as the backend takes them (a streaming backend builds the next
        prompt while earlier calls are in flight); each verdict is stored as soon as its
        completion arrives.
        """
        self_prompting = self.cfg.prompt_variant.name == "self_prompt"
        if self_prompting:  # every experiment takes part, also those whose first stage ends the attempt
            made = list(live)
            stage_one, answerable = self._instructions(index, made, bar)
        else:  # the experiments take part as their requests are taken
            made = []
            stage_one, answerable = {}, ((p, n, p.prompt) for p, n in live)
        asked: dict[str, tuple[Planned, int, str, Request]] = {}  # until the completion is in

        def requests() -> Iterator[Request]:
            for plan, n_tokens, prompt in answerable:
                request = self._request(plan.key, prompt, n_tokens)
                asked[plan.key] = (plan, n_tokens, prompt, request)
                if not self_prompting:
                    made.append((plan, n_tokens))
                yield request

        for completion in self._calls(requests()):
            plan, n_tokens, prompt, request = asked.pop(completion.id)
            sha = plan.prompt_sha if prompt is plan.prompt else None
            stages = [s for s in [stage_one.get(plan.key)] if s] + [self._stage("answer", request, completion, prompt_sha=sha)]
            answer = scoring.parse_answer(completion.text, plan.task.labels)
            verdict, kind = scoring.verdict_of(answer, plan.gold, completion.finish_reason, self.forced_answer_ok)
            counts = scoring.parse_counts(completion.text, plan.task.labels) if self.cfg.strategy.name == "count_report" else None
            self._finish_attempt(plan, n_tokens, index, stages, answer, verdict, kind, bar, counts)
        # Another attempt for those that made this one and are not stored; an experiment
        # whose call failed for good this round is dropped, unstored, with its attempts.
        again = []
        for plan, n_tokens in made:
            if len(self.attempts.get(plan.key, [])) == index + 1:
                again.append((plan, n_tokens))
            else:
                self.attempts.pop(plan.key, None)
        return again

    def _instructions(self, index: int, live: list[tuple[Planned, int]], bar: tqdm):
        """Self-prompting's first stage (App. B.2.3): the model writes the instruction.

        Returns stage one by experiment and the experiments whose stage-two prompt is
        ready and fits the context window. A truncated or empty instruction ends the
        attempt as invalid (truncated / parse).
        """
        metas = [prompts.meta_prompt(p.task.prompt, len(p.positions)) for p, _ in live]
        meta_tokens = self.backend.count_tokens(metas) or [estimate_tokens(m, self.cfg.model.chars_per_token) for m in metas]
        requests = [self._request(p.key, m, t) for (p, _), m, t in zip(live, metas, meta_tokens)]
        by_key = {p.key: (p, n, r) for (p, n), r in zip(live, requests)}
        stage_one: dict[str, Stage] = {}
        ready: list[tuple[Planned, int, str]] = []
        for completion in self._calls(requests):
            plan, n_tokens, request = by_key[completion.id]
            stage = stage_one[plan.key] = self._stage("instruction", request, completion, keep_prompt=True)
            if completion.finish_reason == "length" or not (completion.text or "").strip():
                kind = scoring.TRUNCATED if completion.finish_reason == "length" else scoring.PARSE
                self._finish_attempt(plan, n_tokens, index, [stage], None, scoring.INVALID, kind, bar)
            else:
                ready.append((plan, n_tokens, build_prompt(plan.task, "self_prompt", plan.texts, completion.text)))
        counts = self.backend.count_tokens([prompt for _, _, prompt in ready]) if ready else None
        if counts is not None:
            ready = [(p, c, prompt) for (p, _, prompt), c in zip(ready, counts)]
        fits = []
        for plan, n_tokens, prompt in ready:
            if n_tokens >= self.cfg.model.context_window:
                self._finish_attempt(plan, n_tokens, index, [stage_one[plan.key]], None, scoring.INVALID,
                                     scoring.INPUT_OVERFLOW, bar)
            else:
                fits.append((plan, n_tokens, prompt))
        return stage_one, fits

    # ------------------------------------------------------------------ pieces
    def _request(self, key: str, prompt: str, prompt_tokens: int) -> Request:
        # Never ask for more than the context window leaves after the prompt.
        room = self.cfg.model.context_window - prompt_tokens
        return Request(key, prompt, max(1, min(self.cfg.budget.max_tokens, room)))

    def _calls(self, requests: list[Request]) -> Iterator[Completion]:
        stats = CallStats()
        yield from call_with_retries(self.backend, requests, self.cfg.infra_retries, stats)
        self.summary.calls += stats.calls
        self.summary.unstored += len(stats.failed)
        self.summary.errors += stats.errors

    def _stage(self, name: str, request: Request, c: Completion, keep_prompt: bool = False,
               prompt_sha: str | None = None) -> Stage:
        return Stage(
            name=name,
            prompt=request.prompt if keep_prompt else None,
            prompt_hash=prompt_sha or prompts.prompt_hash(request.prompt),
            output=c.text,
            reasoning=c.reasoning,
            finish_reason=c.finish_reason,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            reasoning_tokens=c.reasoning_tokens,
            max_tokens=request.max_tokens,
            latency_s=c.latency_s,
            usage=c.usage,
            reasoning_raw=c.reasoning_raw,
            reasoning_from=c.reasoning_from,
            provider=c.provider,
            served_model=c.served_model,
        )

    def _finish_attempt(self, plan: Planned, n_tokens: int, index: int, stages: list[Stage], answer: str | None,
                        verdict: str, kind: str | None, bar: tqdm, counts: dict[str, int] | None = None) -> None:
        """Record one attempt; store the experiment when its verdict is final."""
        attempts = self.attempts.setdefault(plan.key, [])
        attempts.append(Attempt(index=index, stages=stages, answer=answer, verdict=verdict, invalid_kind=kind, counts=counts))
        if verdict != scoring.INVALID or len(attempts) >= self.max_attempts:
            self._store(plan, n_tokens, self.attempts.pop(plan.key), kind)
            bar.update(1)

    def _decomposed(self, live: list[tuple[Planned, int]], bar: tqdm) -> None:
        """The decomposed strategy: label batches, ask again for what is missing, count in code.

        Each call's output limit is the budget. An experiment with a batch whose calls kept
        failing is left unstored, like any infrastructure failure.
        """
        k = self.cfg.strategy.batch_size
        predictions = {p.key: [None] * len(p.positions) for p, _ in live}
        stages: dict[str, list[Stage]] = {p.key: [] for p, _ in live}
        failed: set[str] = set()
        for round_ in range(1 + self.cfg.strategy.max_reasks):
            requests, batches = [], {}
            for plan, _ in live:
                if plan.key in failed:
                    continue
                missing = [i for i, x in enumerate(predictions[plan.key]) if x is None]
                for j, prompt in enumerate(decomposed_prompts(plan.task, plan.texts, missing, k)):
                    request = self._request(f"{plan.key}#{round_}.{j}", prompt, estimate_tokens(prompt, self.cfg.model.chars_per_token))
                    requests.append(request)
                    batches[request.id] = (plan, missing[j * k:(j + 1) * k], request)
            if not requests:
                break
            stats = CallStats()
            for completion in call_with_retries(self.backend, requests, self.cfg.infra_retries, stats):
                plan, positions, request = batches[completion.id]
                stages[plan.key].append(self._stage(f"batch {completion.id.split('#')[1]}", request, completion))
                found = scoring.parse_labels(completion.text, plan.task.labels, [i + 1 for i in positions])
                for index, label in found.items():
                    predictions[plan.key][index - 1] = label
            self.summary.calls += stats.calls
            self.summary.errors += stats.errors
            failed |= {rid.split("#")[0] for rid in stats.failed}
        for plan, n_tokens in live:
            if plan.key in failed:
                self.summary.unstored += 1
                continue
            given = predictions[plan.key]
            if not any(given):
                answer, verdict, kind = None, scoring.INVALID, scoring.PARSE
            else:
                answer = scoring.majority_of(given, plan.task.labels)
                verdict, kind = (scoring.CORRECT if answer == plan.gold else scoring.INCORRECT), None
            attempt = Attempt(index=0, stages=stages[plan.key], answer=answer, verdict=verdict, invalid_kind=kind)
            self._store(plan, n_tokens, [attempt], kind, predictions=given)
            bar.update(1)

    def _store(self, plan: Planned, n_tokens: int, attempts: list[Attempt], kind: str | None,
               predictions: list[str | None] | None = None) -> None:
        # The first valid attempt counts; if none is valid, the last one.
        counted = next((a for a in attempts if a.verdict != scoring.INVALID), attempts[-1] if attempts else None)
        verdict, answer = (counted.verdict, counted.answer) if counted else (scoring.INVALID, None)
        if counted:
            kind = counted.invalid_kind
        prompt = final_prompt(plan, counted)
        # Built from typed parts by this code alone, so not validated again (a 2,000-id list
        # costs a fraction of a millisecond to check); every read validates.
        record = Record.model_construct(
            key=plan.key,
            experiment=plan.experiment,
            pool_version=plan.pool.version,
            pool_filtered=plan.pool.meta.filtered,
            instance_ids=plan.ids,
            instance_labels=plan.labels,
            prompt_hash=plan.prompt_sha if prompt is plan.prompt else prompts.prompt_hash(prompt),
            prompt_tokens=n_tokens,
            attempts=attempts,
            answer=answer,
            verdict=verdict,
            invalid_kind=kind if verdict == scoring.INVALID else None,
            predictions=predictions,
            reported_counts=counted.counts if counted else None,
            config=self.record_config,
            git_commit=self.git.get("commit"),
            mip_version=mip.__version__,
            created_at=_now(),
        )
        try:
            self.store.put(record)
        except OSError as e:  # disk full, read-only, no such folder: stop; what is stored stays readable
            raise StoreError(
                f"Cannot write records to {self.store.root} ({e.strerror or e}). The records already written there are "
                "complete and readable; free space or point paths.results_dir at a writable folder, then rerun the "
                "same command to finish."
            ) from e
        self.tracker.log_record(record, prompt)
        plan.release()
        self.summary.stored_now += 1
        self.verdicts[record.invalid_kind or record.verdict] += 1


@dataclass
class CallStats:
    calls: int = 0
    failed: list[str] = field(default_factory=list)
    """Request ids whose calls kept failing."""
    errors: list[str] = field(default_factory=list)


def call_with_retries(backend: Backend, requests: Iterable[Request], retries: int, stats: CallStats) -> Iterator[Completion]:
    """Completions as they arrive; failed calls are retried with backoff, and those that keep
    failing are reported in ``stats`` and never yielded (their work stays unstored).

    ``requests`` may be lazy: the backend pulls them as it has room. An error raised while
    making a request (the caller's own, e.g. the store) propagates as it is; an error of
    the backend fails the calls in flight, which are retried like any failed call.
    """
    source = iter(requests)
    failed: list[Request] = []
    last_error: dict[str, str] = {}
    for retry in range(retries + 1):
        in_flight: dict[str, Request] = {}
        source_error: list[BaseException] = []
        pending, failed, crashed = itertools.chain(failed, source), [], False
        try:
            for completion in backend.generate(_tracked(pending, in_flight, source_error)):
                stats.calls += 1
                request = in_flight.pop(completion.id)
                if completion.error:
                    failed.append(request)
                    last_error[request.id] = completion.error
                else:
                    yield completion
        except Exception as e:  # noqa: BLE001 - a crashed backend call is an infrastructure failure
            if source_error:
                raise source_error[0] from None
            stats.errors.append(f"backend error: {type(e).__name__}: {str(e)[:300]}")
            failed += in_flight.values()
            last_error.update((r.id, f"backend error: {type(e).__name__}") for r in in_flight.values())
            crashed = True
        if not (failed or crashed):
            return
        if failed and retry < retries:
            time.sleep(min(2**retry, 30))
    for r in [*failed, *source]:  # what is still unasked after a crash on the last try fails too
        stats.failed.append(r.id)
        why = last_error.get(r.id, "never asked after the backend failed")
        stats.errors.append(f"{r.id}: infrastructure failure persisted ({why[:300]}); left unstored for a rerun")


def _tracked(pending: Iterable[Request], in_flight: dict[str, Request], errors: list[BaseException]) -> Iterator[Request]:
    """``pending`` as the backend pulls it, noting each request in flight and any error of the source."""
    try:
        for request in pending:
            in_flight[request.id] = request
            yield request
    except Exception as e:
        errors.append(e)
        raise
