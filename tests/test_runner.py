"""The job loop with scripted backends: store, resume, attempts, failures, overflow."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from mip.data import build_pool
from mip.experiment.planning import plan_job
from mip.strategies import build
from mip.strategies.rebuild import rebuild_prompt
from mip.models import Backend, Completion, Request
from mip.store import Store
from mip.job import run_job
from mip.models.calls import CallStats, call_with_retries

from .conftest import compose


def config(tmp_path: Path, *overrides: str):
    # Scripted backends answer differently call by call: not deterministic, so up to max_attempts.
    return compose("model=mock", "model.deterministic=false", "task=arith", "setting=smoke", "budget=smoke", "progress=false",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *overrides)


class Scripted(Backend):
    """Answers from a list of outputs per call number; records every request."""

    def __init__(self, outputs: Sequence[str | Exception], finish: str = "stop"):
        self.outputs, self.finish = list(outputs), finish
        self.requests: list[Request] = []

    def generate(self, requests: Sequence[Request]) -> Iterator[Completion]:
        for r in requests:
            out = self.outputs[min(len(self.requests), len(self.outputs) - 1)]
            self.requests.append(r)
            if isinstance(out, Exception):
                yield Completion(r.id, error=str(out))
            else:
                yield Completion(r.id, output=out, finish_reason=self.finish, prompt_tokens=10, completion_tokens=5)


def stored(cfg) -> list:
    return list(Store(cfg.paths.store_dir))


def test_job_stores_every_experiment_and_a_rerun_calls_nothing(tmp_path):
    cfg = config(tmp_path, "pattern=random")
    first = run_job(cfg, tmp_path / "job1")
    assert first.experiments == 6 and first.stored_now == 6 and first.calls == 6  # 2 labels × 3 order seeds
    records = stored(cfg)
    assert len(records) == 6
    assert {r.experiment.order_seed for r in records} == {0, 1, 2}
    backend = Scripted(['{"answer": "even_number"}'])
    second = run_job(cfg, tmp_path / "job2", backend=backend)
    assert second.already_stored == 6 and second.stored_now == 0 and backend.requests == []
    manifest = json.loads((tmp_path / "job2" / "job.json").read_text())
    assert manifest["git"]["commit"] and manifest["keys"] == first.keys
    assert (tmp_path / "job2" / "config.yaml").is_file()


def test_records_rebuild_their_prompt_and_carry_gold_labels(tmp_path):
    cfg = config(tmp_path, "pattern=majority_middle")
    run_job(cfg, tmp_path / "job")
    pool = build_pool(cfg.task["arith"], None, cfg.paths.cache_dir)
    for record in stored(cfg):
        prompt = rebuild_prompt(record, cfg.task["arith"], pool)
        assert prompt.count("Instance ") == 10
        n_min = record.instance_labels.count(record.experiment.majority_label)
        assert n_min == 6  # p = 0.6 of 10
        assert [pool.get(i).label for i in record.instance_ids] == record.instance_labels
        assert record.config["model"]["name"] == "mock" and record.git_commit
        tampered = record.model_copy(update={"prompt_hash": "0" * 64})
        with pytest.raises(ValueError, match="does not match its stored hash"):
            rebuild_prompt(tampered, cfg.task["arith"], pool)


def test_first_valid_attempt_counts_and_all_are_recorded(tmp_path):
    cfg = config(tmp_path, "pattern=majority_first", "max_attempts=3")
    # Calls go out round by round: both experiments fail twice, then answer.
    backend = Scripted(["no json here", "no json here", "still nothing", "still nothing", '{"answer": "odd_number"}'])
    summary = run_job(cfg, tmp_path / "job", backend=backend)
    assert summary.stored_now == 2
    for record in stored(cfg):
        assert [a.verdict for a in record.attempts][-1] != "invalid"
        assert record.attempts[0].invalid_kind == "parse"
        assert record.answer == "odd_number"
    assert len(backend.requests) == 6


@pytest.mark.parametrize("planted", [("even_number", None), (None, "even_number", None)])
def test_the_first_valid_attempt_counts_when_others_follow_it(tmp_path, planted):
    """Paid attempts a stopped job left (a valid one, then an invalid one last) and one more
    call that answers the other label: only "the first valid attempt counts" gives
    ``even_number``; "the last counts" or "the last valid counts" would give ``odd_number``."""
    probe = config(tmp_path / "probe", "pattern=majority_first", "max_attempts=4")
    run_job(probe, tmp_path / "probe" / "job", backend=Scripted(['{"answer": "odd_number"}']))
    cfg = config(tmp_path / "real", "pattern=majority_first", "max_attempts=4")
    store = Store(cfg.paths.store_dir)
    for record in stored(probe):  # the same keys: the results folder is not part of a key
        e, template = record.experiment, record.attempts[0]
        for index, answer in enumerate(planted):
            verdict = "invalid" if answer is None else "correct" if answer == e.majority_label else "incorrect"
            store.put_attempt(e.model, e.task, record.key, template.model_copy(update={
                "index": index, "answer": answer, "verdict": verdict, "invalid_kind": "parse" if answer is None else None}))
    backend = Scripted(['{"answer": "odd_number"}'])
    summary = run_job(cfg, tmp_path / "real" / "job", backend=backend)
    assert summary.ok and len(backend.requests) == 2  # one more call each: the last paid attempt was invalid
    for record in stored(cfg):
        assert [a.answer for a in record.attempts] == [*planted, "odd_number"]
        assert record.answer == "even_number", [a.verdict for a in record.attempts]
        assert record.verdict == ("correct" if record.experiment.majority_label == "even_number" else "incorrect")


def test_invalid_after_all_attempts_keeps_the_last_kind(tmp_path):
    cfg = config(tmp_path, "pattern=majority_first", "max_attempts=2")
    backend = Scripted(["truncated text"], finish="length")
    run_job(cfg, tmp_path / "job", backend=backend)
    for record in stored(cfg):
        assert record.verdict == "invalid" and record.invalid_kind == "truncated" and len(record.attempts) == 2


def test_a_model_configured_deterministic_is_not_asked_twice(tmp_path):
    """The model config alone decides the attempts (mip.experiment.keys.attempts_allowed), and records say how many."""
    cfg = config(tmp_path, "pattern=majority_first", "max_attempts=3", "model.deterministic=true")
    backend = Scripted(["no json"])
    run_job(cfg, tmp_path / "job", backend=backend)
    assert len(backend.requests) == 2
    assert all(r.attempts_allowed == 1 and r.config["attempts_made_at_most"] == 1 for r in stored(cfg))
    again = config(tmp_path, "pattern=majority_first", "max_attempts=3", "model.deterministic=false")
    backend = Scripted(["no json"])
    run_job(again, tmp_path / "job2", backend=backend)  # other keys: the attempts allowed shape the verdict
    assert len(backend.requests) == 6
    assert {r.attempts_allowed for r in stored(again)} == {1, 3}


def test_infrastructure_failures_are_retried_then_left_unstored(tmp_path):
    cfg = config(tmp_path, "pattern=majority_first", "infra_retries=1")
    backend = Scripted([RuntimeError("HTTP 503")])
    summary = run_job(cfg, tmp_path / "job", backend=backend)
    assert summary.unstored == 2 and not summary.ok and summary.stored_now == 0
    assert stored(cfg) == []  # never a verdict
    assert len(backend.requests) == 4  # first call + one retry, for each experiment
    healed = Scripted(['{"answer": "even_number"}'])
    again = run_job(cfg, tmp_path / "job2", backend=healed)
    assert again.stored_now == 2 and again.ok


def test_a_transient_failure_heals_within_the_job(tmp_path):
    cfg = config(tmp_path, "pattern=majority_first", "infra_retries=2")
    backend = Scripted([RuntimeError("reset"), '{"answer": "even_number"}'])
    summary = run_job(cfg, tmp_path / "job", backend=backend)
    assert summary.ok and summary.stored_now == 2


class Crashing(Scripted):
    """Takes every request, answers the first, then fails."""

    def generate(self, requests):
        yield from super().generate(list(requests)[:1])
        raise ConnectionError("server went away")


class CrashingLazily(Scripted):
    """Takes one request, answers it, then fails before taking the next (a streaming backend)."""

    def generate(self, requests):
        yield from super().generate([next(iter(requests))])
        raise ConnectionError("server went away")


@pytest.mark.parametrize("backend_class", [Crashing, CrashingLazily])
def test_a_crashing_backend_loses_nothing_already_returned(tmp_path, backend_class):
    cfg = config(tmp_path, "pattern=majority_first", "infra_retries=0")
    summary = run_job(cfg, tmp_path / "job", backend=backend_class(['{"answer": "even_number"}']))
    assert summary.stored_now == 1 and summary.unstored == 1  # the one never asked is reported too
    assert any("server went away" in e for e in summary.errors)
    retried = run_job(config(tmp_path, "pattern=majority_first", "infra_retries=1", "seed=1"), tmp_path / "job2",
                      backend=backend_class(['{"answer": "even_number"}']))
    assert retried.stored_now == 2 and retried.ok  # the retry asks what the crash left


def test_an_error_of_the_caller_while_requests_are_made_is_not_a_backend_failure():
    """A request source that fails (e.g. the store, while storing an overflow) stops the call
    loop with its own error instead of counting as a failed backend call."""
    def source():
        yield Request("a", "hi", 4)
        raise OSError("disk full")

    stats = CallStats()
    with pytest.raises(OSError, match="disk full"):
        list(call_with_retries(Scripted(["x"]), source(), 3, stats))
    assert stats.errors == []


def test_input_overflow_is_found_before_any_call(tmp_path):
    cfg = config(tmp_path, "pattern=majority_first", "model.context_window=50", "budget.max_tokens=10")
    backend = Scripted(['{"answer": "even_number"}'])
    backend.count_tokens = lambda prompts: [len(p) for p in prompts]
    summary = run_job(cfg, tmp_path / "job", backend=backend)
    assert backend.requests == [] and summary.verdicts == {"input_overflow": 2}
    assert all(r.invalid_kind == "input_overflow" and r.attempts == [] for r in stored(cfg))


def test_prompts_are_built_as_requests_go_out_and_dropped_once_stored(tmp_path, monkeypatch):
    """A job holds the prompts of a few experiments at a time, not all of them (at n = 2,000
    each is ~200 KB), and calls nothing until the first prompts are ready."""
    from mip.job import job_run

    plans: list = []
    real_plan_job = job_run.plan_job
    monkeypatch.setattr(job_run, "plan_job", lambda *args: plans.extend(real_plan_job(*args)) or plans)
    held = []

    class Watching(Scripted):
        def generate(self, requests):
            for request in requests:
                held.append(sum("prompt" in p.__dict__ for p in plans))
                yield from super().generate([request])

    cfg = config(tmp_path, "pattern=random", f"order_seeds=[{','.join(map(str, range(20)))}]")
    summary = run_job(cfg, tmp_path / "job", backend=Watching(['{"answer": "even_number"}']))
    assert summary.stored_now == 40 and len(held) == 40
    assert max(held) <= 16  # one chunk of token counting at most
    assert not any("prompt" in p.__dict__ or "positions" in p.__dict__ for p in plans)  # all released


def test_requests_never_ask_past_the_context_window(tmp_path):
    cfg = config(tmp_path, "pattern=majority_first", "model.context_window=1000", "budget.max_tokens=800")
    backend = Scripted(['{"answer": "even_number"}'])
    backend.count_tokens = lambda prompts: [400 for _ in prompts]
    run_job(cfg, tmp_path / "job", backend=backend)
    assert {r.max_tokens for r in backend.requests} == {600}


def test_self_prompting_records_both_stages_and_rebuilds(tmp_path):
    cfg = config(tmp_path, "pattern=majority_last", "prompt_variant=self_prompt")
    instruction = "Solve each expression, count parities, answer in JSON."
    backend = Scripted([instruction, instruction, '{"answer": "even_number"}'])
    run_job(cfg, tmp_path / "job", backend=backend)
    assert [r.prompt.startswith("Write the instruction prompt") for r in backend.requests] == [True, True, False, False]
    assert "over 10 arithmetic expressions" in backend.requests[0].prompt
    pool = build_pool(cfg.task["arith"], None, cfg.paths.cache_dir)
    for record in stored(cfg):
        stages = record.attempts[0].stages
        assert [s.name for s in stages] == ["instruction", "answer"]
        assert stages[0].prompt.startswith("Write the instruction prompt")
        prompt = rebuild_prompt(record, cfg.task["arith"], pool)
        assert prompt.startswith("Solve each expression") and "Instance 10:" in prompt


def test_self_prompting_empty_instruction_is_an_invalid_attempt(tmp_path):
    cfg = config(tmp_path, "pattern=majority_last", "prompt_variant=self_prompt", "max_attempts=2")
    backend = Scripted(["", "Count.", '{"answer": "odd_number"}', "Count.", '{"answer": "odd_number"}'])
    run_job(cfg, tmp_path / "job", backend=backend)
    records = stored(cfg)
    assert len(records) == 2
    first = next(r for r in records if r.attempts[0].invalid_kind == "parse")
    assert first.answer == "odd_number" and len(first.attempts) == 2


def test_dry_run_counts_without_calling(tmp_path):
    cfg = config(tmp_path, "pattern=random", "dry_run=true")
    backend = Scripted(['{"answer": "even_number"}'])
    summary = run_job(cfg, tmp_path / "job", backend=backend)
    assert summary.experiments == 6 and summary.prompt_tokens > 0 and summary.tokens_estimated
    assert backend.requests == [] and stored(cfg) == []


def test_plan_core_grid_sizes():
    cfg = compose("model=mock", "task=arith", "n=100", "p=0.7", "pattern=soft_majority_edges")
    pools = {"arith": build_pool(cfg.task["arith"], None, None)}
    plans = plan_job(cfg, pools, build(cfg.strategy, cfg.prompt_variant.name))
    assert len(plans) == 2 and len({p.key for p in plans}) == 2
    assert all(len(p.instances) == 100 for p in plans)


def test_n_larger_than_the_pool_names_the_numbers(tmp_path):
    cfg = config(tmp_path, "n=2000", "p=0.55")
    with pytest.raises(ValueError, match="needs 1100 instances .* holds only 500"):
        run_job(cfg, tmp_path / "job")


@pytest.mark.parametrize("dry", ["false", "true"])
def test_a_budget_larger_than_the_context_window_is_refused_before_any_work(tmp_path, dry):
    """A dry run is refused as the real run is: it must not count a grid that cannot run."""
    cfg = config(tmp_path, "pattern=majority_first", "model.context_window=8192", "budget=20k", f"dry_run={dry}")
    with pytest.raises(ValueError, match=r"^Budget 20k \(20000 output tokens\) is larger than the context window of "
                                         r"mock \(8192\); choose a smaller budget"):
        run_job(cfg, tmp_path / "job")
    assert not (tmp_path / "job").exists()


def test_a_budget_given_as_a_number_is_refused_by_that_number(tmp_path):
    """budget.max_tokens=300000 keeps the name 20k in the config; the refusal names what was given."""
    cfg = config(tmp_path, "pattern=majority_first", "model.context_window=8192", "budget=20k", "budget.max_tokens=300000")
    with pytest.raises(ValueError, match=r"^Budget budget.max_tokens=300000 \(300000 output tokens\) is larger"):
        run_job(cfg, tmp_path / "job")


@pytest.mark.parametrize("answer", [0, 320, 500])
def test_a_budget_split_outside_the_budget_is_refused_by_the_settings_check(answer):
    """App. C.2's split keeps ``answer_tokens`` of the budget for the answer: none, or all of it
    or more, leaves nothing to reason with or nothing to answer with: refused with the settings
    (checked once, before any call or data read), not at the first request."""
    from mip.job.checks import settings

    cfg = compose("model=qwen36_plus", "task=arith", "budget=smoke", f"model.budget_split.answer_tokens={answer}")
    assert cfg.budget.max_tokens == 320
    with pytest.raises(ValueError, match=rf"^qwen36_plus: budget_split.answer_tokens={answer} must lie between 0 and "):
        settings(cfg)
    settings(compose("model=qwen36_plus", "task=arith", "budget=smoke", "model.budget_split.answer_tokens=319"))


def test_expanded_orderings_shuffle_each_label_then_arrange(tmp_path):
    cfg = compose("+experiment=expanded_orderings", "model=mock", "task=arith", "n=20", "p=0.6", "pattern=majority_middle")
    assert cfg.shuffle_seeds == list(range(1, 51))
    pools = {"arith": build_pool(cfg.task["arith"], None, None)}
    plans = plan_job(cfg, pools, build(cfg.strategy, cfg.prompt_variant.name))
    assert len(plans) == 2 * 50 and len({p.key for p in plans}) == 100
    for plan in plans[:5]:
        labels = [x.label for x in plan.instances]
        minority = next(label for label in cfg.task["arith"].labels if label != plan.gold)
        assert labels == [minority] * 4 + [plan.gold] * 12 + [minority] * 4  # the pattern is kept
    first, second = plans[0], plans[1]
    assert {x.id for x in first.instances} == {x.id for x in second.instances}  # same instance set
    assert [x.id for x in first.instances] != [x.id for x in second.instances]  # another order inside the blocks
    assert (first.experiment.shuffle_seed, second.experiment.shuffle_seed) == (1, 2)


def test_random_ignores_shuffle_seeds():
    cfg = compose("model=mock", "task=arith", "n=20", "p=0.6", "pattern=random", "shuffle_seeds=[1,2]")
    plans = plan_job(cfg, {"arith": build_pool(cfg.task["arith"], None, None)}, build(cfg.strategy, cfg.prompt_variant.name))
    assert len(plans) == 6 and all(p.experiment.shuffle_seed is None for p in plans)


@pytest.mark.parametrize(("pattern", "key", "sha"), [
    ("random", "dd3d4d88e07ef9e561752456", "203bf02558fc8f6a475645d37316eb2755e497a506cb9c95f5cea16971c19804"),
    ("soft_majority_edges", "ecf734874cce41a79c9c567c", "0408bae11bf4802d2d868e2dc7a1baf2fb25479d8f77dcebf5606dd90a2a982b"),
    ("majority_middle shuffle_seeds=[3]", "ebf7195c032315b03d091567",
     "8f7b69a9ebae1d2220fad2bef80b519dd3e2ebfb923a802abd79d4a1517006d3"),  # prompts pinned from 0.2.0
])
def test_keys_and_prompts_stay_what_earlier_versions_stored(tmp_path, pattern, key, sha):
    """Prompts pinned from mip 0.1.0, keys from key scheme 2 (mip 0.3): a faster selection,
    arrangement or prompt builder must give the same keys and prompts, or stored records would
    be paid for again and no longer rebuild. (Scheme 1's keys differ by design: mip.experiment.keys.)"""
    pattern, *more = pattern.split()
    cfg = compose("model=mock", "task=arith", f"pattern={pattern}", "n=40", "p=0.6", "seed=2", "order_seeds=[7]",
                  "budget=20k", f"paths.cache_dir={tmp_path}", *more)  # the budget is in the key; pinned at 20k
    from mip.job import load_pools

    plan = plan_job(cfg, load_pools(cfg), build(cfg.strategy, cfg.prompt_variant.name))[0]
    assert (plan.key, plan.prompt_sha) == (key, sha)


@pytest.mark.parametrize("model", ["gpt_oss_120b", "qwen36_35b"])
def test_a_dry_run_needs_no_key_no_vllm_and_counts_what_overflows(tmp_path, monkeypatch, model):
    """An API model without its key and a vLLM model without vLLM both count; SmolLM2-sized
    windows show every prompt that will overflow."""
    import sys

    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "vllm", None)
    cfg = compose(f"model={model}", "task=arith", "n=400", "p=0.55", "pattern=majority_first", "dry_run=true",
                  "model.context_window=2048", "budget=smoke", "progress=false", f"paths.results_dir={tmp_path}",
                  f"paths.cache_dir={tmp_path / 'cache'}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.experiments == 2 and summary.overflowing == 2 and summary.max_output_tokens == 0
    assert summary.overflow_prompt_tokens == summary.prompt_tokens > 0  # never sent: kept apart from the cost
    assert summary.tokens_from  # says how tokens were counted
    sent = ("calls", "sent_prompt_tokens", "max_output_tokens", "ceiling_calls", "ceiling_prompt_tokens",
            "ceiling_output_tokens")
    assert summary.per_task == {"arith": {"experiments": 2, "prompt_tokens": summary.prompt_tokens, "overflowing": 2,
                                          **dict.fromkeys(sent, 0)}}  # nothing is sent
