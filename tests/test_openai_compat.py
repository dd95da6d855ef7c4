"""The openai_compat backend against a local fault-injecting server: every fault ends in
a correct record or an unstored, reported experiment — never a wrong verdict."""

from __future__ import annotations

import datetime as dt
import email.utils
import os

import pytest

from mip.config import OpenAICompatModelConfig
from mip.models import BackendSetupError, Request, build_backend
from mip.models.chat_api import completion_from, error_message, request_body, retry_delay, should_retry
from mip.models.transports import proxy_for
from mip.store import Store
from mip.job import run_job

from .conftest import compose
from .fake_server import KINDS, FakeServer, majority_answer


def config(tmp_path, server: FakeServer, *overrides: str):
    # The fake server is not SmolLM2: no local tokenizer (the config names the folder the real server serves).
    return compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
                   "model.tokenizer=null",
                   "task=arith", "setting=smoke", "budget=smoke", "progress=false", "model.request_timeout_s=2",
                   "model.client_max_retries=3", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}",
                   *overrides)


def records(cfg):
    return list(Store(cfg.paths.store_dir))


def test_fake_server_answers_correctly():
    assert majority_answer('Choose exactly one label from: "even_number", "odd_number".\n'
                           "Instance 1: What is 2 + 2?\nInstance 2: What is 3 × 3?\nInstance 3: What is 10 - 3?") == "odd_number"


@pytest.mark.parametrize("shape", ["reasoning", "reasoning_content", "reasoning_details"])
@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_clean_run_stores_reasoning_usage_and_provider(tmp_path, shape, transport):
    with FakeServer(reasoning_shape=shape) as server:
        cfg = config(tmp_path, server, "pattern=random", f"model.transport={transport}")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.verdicts == {"correct": 6}
    for record in records(cfg):
        stage = record.attempts[0].stages[0]
        assert stage.reasoning.startswith("Instance 1 is even")
        if shape == "reasoning_details":  # the trace is its text, stored once; its items kept without it
            assert stage.reasoning_from == [shape] and "Instance 1" not in str(stage.reasoning_raw)
        else:  # the field the server used is named, and the trace is stored once
            assert stage.reasoning_from == [shape] and stage.reasoning_raw == {}
        assert stage.output.startswith('{"answer"') and "Instance 1" not in stage.output  # never merged
        assert stage.usage["cost"] == 0.00042 and stage.usage["prompt_tokens_details"]["cached_tokens"] == 0
        assert stage.reasoning_tokens == 8 and stage.provider == "FakeProvider" and stage.served_model == "fake-model"
    if shape == "reasoning_details":
        assert records(cfg)[0].attempts[0].stages[0].reasoning_raw["reasoning_details"][1]["type"] == "reasoning.encrypted"


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
@pytest.mark.parametrize("kind", KINDS)
def test_each_fault_ends_in_a_correct_record(tmp_path, kind, transport):
    with FakeServer(stall_s=4) as server:
        server.faults = {kind: 1}
        cfg = config(tmp_path, server, "pattern=majority_middle", "model.request_timeout_s=1", f"model.transport={transport}")
        summary = run_job(cfg, tmp_path / "job")
        outcomes = [o for _, o in server.log]
    assert summary.ok, summary.errors
    assert summary.verdicts == {"correct": 2}
    assert outcomes.count(kind) == 2 and outcomes.count("ok") == 2
    assert all(len(r.attempts) == 1 for r in records(cfg))  # an infrastructure retry is not an attempt


def test_a_persistent_fault_leaves_experiments_unstored_then_a_rerun_completes(tmp_path):
    with FakeServer() as server:
        server.faults = {"500": 100}
        cfg = config(tmp_path, server, "pattern=majority_first", "infra_retries=1", "model.client_max_retries=1")
        summary = run_job(cfg, tmp_path / "job1")
        assert not summary.ok and summary.unstored == 2 and records(cfg) == []
        assert any("left unstored" in e for e in summary.errors)
        server.faults = {}
        again = run_job(cfg, tmp_path / "job2")
    assert again.ok and again.verdicts == {"correct": 2}


def test_twenty_percent_faults_give_the_verdicts_of_a_clean_run(tmp_path):
    with FakeServer(stall_s=3, seed=1) as server:
        server.fault_rate = 0.2
        cfg = config(tmp_path, server, "pattern=random", "order_seeds=[0,1,2,3,4,5,6,7]", "model.request_timeout_s=1",
                     "infra_retries=5")
        summary = run_job(cfg, tmp_path / "job")
        faults = sum(o != "ok" for _, o in server.log)
    assert faults > 0
    assert summary.ok and summary.verdicts == {"correct": 16}


def test_concurrency_is_bounded(tmp_path):
    with FakeServer(latency_s=0.2) as server:
        cfg = config(tmp_path, server, "pattern=random", "order_seeds=[0,1,2,3,4,5,6,7,8,9]", "model.max_concurrency=3")
        summary = run_job(cfg, tmp_path / "job")
        # at most the limit at once, and more than one at a time (20 calls of 0.2 s each); no exact
        # count, which would depend on how the threads are scheduled
        assert summary.ok and 1 < server.max_in_flight <= 3


def test_request_carries_pinning_reasoning_and_split_budget():
    cfg = OpenAICompatModelConfig(name="m", backend="openai_compat", model_id="qwen/x", context_window=100000)
    cfg.provider.order = ["Alibaba"]
    cfg.reasoning = {"enabled": True}
    cfg.budget_split.answer_tokens = 20
    body = request_body(cfg, Request("r", "hi", 20000))
    assert body["max_tokens"] == 20000 and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["model"] == "qwen/x"
    assert body["provider"] == {"order": ["Alibaba"], "allow_fallbacks": False, "require_parameters": True}
    assert body["reasoning"] == {"enabled": True, "max_tokens": 19980}


def test_paper_model_configs_compose_with_their_settings():
    plus = compose("model=qwen36_plus").model
    assert plus.budget_split.answer_tokens == 20 and plus.provider.allow_fallbacks is False
    assert compose("model=gemma4_31b").model.reasoning == {"enabled": False}
    assert compose("model=gpt_oss_120b").model.context_window == 131072
    assert compose("model=qwen36_35b").model.backend == "vllm"


def test_split_budget_scales_with_100k(tmp_path):
    with FakeServer() as server:
        cfg = config(tmp_path, server, "pattern=majority_first", "model.budget_split.answer_tokens=20",
                     "model.context_window=200000", "budget=100k")
        run_job(cfg, tmp_path / "job")
        assert {b["max_tokens"] for b in server.bodies} == {100000}
        assert {b["reasoning"]["max_tokens"] for b in server.bodies} == {99980}


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(BackendSetupError, match="set the environment variable OPENROUTER_API_KEY"):
        build_backend(compose("model=gpt_oss_120b").model, "/tmp")


def test_unreachable_endpoint_says_which_url(tmp_path):
    cfg = compose("model=smollm2_135m_server", "model.base_url=http://127.0.0.1:9/v1", "model.model_id=x").model
    with pytest.raises(BackendSetupError, match=r"Cannot reach http://127.0.0.1:9/v1"):
        build_backend(cfg, tmp_path).check()


def test_a_model_the_server_does_not_serve_shows_its_list(tmp_path):
    with FakeServer(model="served-model") as server:
        cfg = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=other").model
        with pytest.raises(BackendSetupError, match="does not serve 'other'.*served-model"):
            build_backend(cfg, tmp_path).check()


def test_a_planted_secret_never_reaches_a_file(tmp_path, monkeypatch):
    secret = "sk-planted-SECRET-4f9c2e"
    monkeypatch.setenv("MIP_TEST_API_KEY", secret)
    with FakeServer() as server:
        cfg = config(tmp_path, server, "pattern=majority_first", "model.api_key_env=MIP_TEST_API_KEY")
        summary = run_job(cfg, tmp_path / "job")
        assert summary.ok
        assert any(h.get("authorization") == f"Bearer {secret}" for h in server.headers_seen)  # it was used
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_prompt_tokens_from_the_servers_tokenize_endpoint(tmp_path):
    with FakeServer() as server:
        cfg = config(tmp_path, server, "pattern=majority_first", "model.server_tokenize=true")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and not summary.tokens_estimated
    expected = {len(b["messages"][-1]["content"]) // 4 + 7 for b in server.bodies}
    assert {r.prompt_tokens for r in records(cfg)} == expected


def test_without_a_tokenizer_prompt_tokens_are_a_labelled_estimate(tmp_path):
    with FakeServer() as server:
        cfg = config(tmp_path, server, "pattern=majority_first", "dry_run=true")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.tokens_estimated and summary.prompt_tokens > 0 and server.bodies == []


# ---------------------------------------------------------------------- the lean transport

def test_retry_delay_follows_the_server_then_backs_off():
    assert retry_delay({"Retry-After": "2"}, 0) == 2.0
    assert retry_delay({"retry-after-ms": "250"}, 0) == 0.25
    in_three = email.utils.format_datetime(dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=3), usegmt=True)
    assert 1.5 < retry_delay({"Retry-After": in_three}, 0) <= 3.0
    # Too long, negative or unreadable: the backoff of 0.5 s doubling to 8 s, less up to 25 % jitter.
    assert [retry_delay({}, k, jitter=0.0) for k in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert retry_delay({"Retry-After": "3600"}, 1, jitter=0.0) == 1.0
    assert retry_delay({"Retry-After": "-1"}, 0, jitter=1.0) == 0.375
    assert retry_delay({"Retry-After": "soon"}, 2, jitter=0.0) == 2.0


def test_which_statuses_are_retried():
    assert [s for s in (400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504) if should_retry(s, {})] == \
        [408, 409, 429, 500, 502, 503, 504]
    assert not should_retry(503, {"x-should-retry": "false"}) and should_retry(400, {"X-Should-Retry": "true"})


def test_error_messages_from_json_and_other_bodies():
    assert error_message(b'{"error": {"message": "rate limited", "code": 429}}') == "rate limited"
    assert error_message(b'{"error": "plain"}') == "plain"
    assert error_message(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"


def test_a_trace_is_stored_once_and_other_reasoning_fields_verbatim():
    same = completion_from("r", {"choices": [{"finish_reason": "stop", "message": {
        "content": "{}", "reasoning": "think", "reasoning_content": "think"}}]}, 0.1)
    assert same.reasoning == "think" and same.reasoning_from == ["reasoning", "reasoning_content"] and same.reasoning_raw == {}
    differ = completion_from("r", {"choices": [{"finish_reason": "stop", "message": {
        "content": "{}", "reasoning": "think", "reasoning_content": "other"}}]}, 0.1)
    assert differ.reasoning_from == ["reasoning"] and differ.reasoning_raw == {"reasoning_content": "other"}
    assert completion_from("r", ["not", "an", "object"], 0.1).error
    assert completion_from("r", {"choices": [{"finish_reason": "error", "message": {}}]}, 0.1).error


def test_a_reply_with_a_field_of_the_wrong_type_is_an_infrastructure_failure():
    """The reply is checked where it is read, as a record's stage would check it: a failed
    call for this request (retried, then left unstored), not a crash of the job."""
    reply = {"choices": [{"finish_reason": "stop", "message": {"content": '{"answer": "odd_number"}'}}],
             "usage": {"prompt_tokens": "many"}}
    bad = completion_from("r", reply, 0.1)
    assert bad.error == ("a 200 response with a malformed field: prompt_tokens: Input should be a valid integer, "
                         "unable to parse string as an integer, got 'many'") and bad.output is None
    assert completion_from("r", {**reply, "usage": {"prompt_tokens": 7}}, 0.1).prompt_tokens == 7


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_a_refused_request_is_not_retried(tmp_path, transport):
    with FakeServer() as server:
        server.faults = {"400": 100}
        cfg = config(tmp_path, server, "pattern=majority_first", "infra_retries=0", f"model.transport={transport}")
        summary = run_job(cfg, tmp_path / "job")
        outcomes = [o for _, o in server.log]
    assert summary.unstored == 2 and records(cfg) == []
    assert outcomes == ["400", "400"]  # one call each: the same request would be refused again
    assert sum("HTTP 400: prompt is too long" in e for e in summary.errors) == 2  # said why, never a verdict


def test_retry_after_is_waited_for(tmp_path, monkeypatch):
    """The wait the server asks for is the wait slept before the retry: recorded, not timed."""
    import asyncio

    from mip.models import calls

    slept, sleep = [], asyncio.sleep

    async def recorded(delay, *args, **kwargs):
        slept.append(delay)
        return await sleep(delay, *args, **kwargs)

    monkeypatch.setattr(calls.asyncio, "sleep", recorded)
    with FakeServer(retry_after="1") as server:
        server.faults = {"429": 1}
        cfg = config(tmp_path, server, "pattern=majority_first")
        summary = run_job(cfg, tmp_path / "job")
        arrivals = list(server.arrivals)
    assert summary.ok and summary.verdicts == {"correct": 2}
    assert all(len([a for a in arrivals if a[0] == key]) == 2 for key, _, _ in arrivals)  # refused once, asked again
    assert slept.count(1.0) == 2  # one wait of the one second the server asked for, before each retry


def test_requests_are_taken_as_slots_free(tmp_path):
    """The backend sends the next request only when it has room, and builds a few ahead while
    it waits: the runner builds each prompt while earlier requests are in flight, never all of
    them up front."""
    with FakeServer(latency_s=0.3) as server:
        model = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                        "model.max_concurrency=4").model
        backend = build_backend(model, tmp_path)
        taken = []

        def requests():
            for i in range(40):
                taken.append(i)
                yield Request(f"r{i}", f'Choose exactly one label from: "even_number", "odd_number".\nInstance 1: What is {i} + 0?', 8)

        stream = backend.generate(requests())
        first = next(stream)
        # max_concurrency sent, and at most max(2, 4 // 4) built ahead of a free slot, not sent
        assert not first.error and 4 <= len(taken) <= 6 and server.max_in_flight <= 4
        stream.close()  # the consumer stops early: what is in flight is dropped
        again = list(backend.generate([Request("x", "Instance 1: What is 2 + 2?", 8)]))
        backend.close()
    assert len(again) == 1 and not again[0].error  # and the backend serves on


def test_generate_runs_where_an_event_loop_already_runs(tmp_path):
    """A notebook's thread already runs an event loop: the backend's own loop moves to a
    thread there, and the requests go out all the same."""
    import asyncio
    import threading

    with FakeServer(latency_s=0.05) as server:
        model = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                        "model.max_concurrency=4").model
        backend = build_backend(model, tmp_path)
        requests = [Request(f"r{i}", f"Instance 1: What is {i} + 0?", 8) for i in range(10)]

        async def in_a_notebook_cell():
            return list(backend.generate(requests)), threading.active_count()

        completions, threads = asyncio.run(in_a_notebook_cell())
        backend.close()
        alone = build_backend(model, tmp_path)  # a plain script: the loop runs in the caller's thread
        plain = list(alone.generate(requests))
        assert threading.active_count() == threads - 1
        alone.close()
    assert sorted(c.id for c in completions) == sorted(c.id for c in plain) == sorted(r.id for r in requests)
    assert not any(c.error for c in completions + plain)


def test_two_streams_of_one_backend_interleave(tmp_path):
    """Each stream gets its own completions, also when the loop, turned for one, finishes
    the other's requests first."""
    with FakeServer(latency_s=0.02) as server:
        model = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                        "model.max_concurrency=3").model
        backend = build_backend(model, tmp_path)
        a = backend.generate(Request(f"a{i}", f"Instance 1: What is {i} + 0?", 8) for i in range(12))
        b = backend.generate(Request(f"b{i}", f"Instance 1: What is {i} + 1?", 8) for i in range(12))
        got = {"a": [], "b": []}
        for x, y in zip(a, b):
            got["a"].append(x.id)
            got["b"].append(y.id)
        got["a"] += [c.id for c in a]
        got["b"] += [c.id for c in b]
        backend.close()
    assert sorted(got["a"]) == sorted(f"a{i}" for i in range(12))
    assert sorted(got["b"]) == sorted(f"b{i}" for i in range(12))


def test_an_https_proxy_from_the_environment_is_used(tmp_path, monkeypatch):
    with FakeServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        cfg = compose("model=smollm2_135m_server", "model.base_url=http://upstream.invalid/v1", "model.model_id=fake-model", "model.tokenizer=null",
                      "task=arith", "setting=smoke", "budget=smoke", "progress=false", "pattern=majority_first",
                      f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
        summary = run_job(cfg, tmp_path / "job")
        seen = [h.get("host") for h in proxy.headers_seen]
    assert summary.ok and summary.verdicts == {"correct": 2}
    assert "upstream.invalid" in seen  # the listing and both calls went through the proxy


def test_proxy_settings_are_read_once_per_session(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    through = proxy_for("https://openrouter.ai/api/v1/chat/completions")
    assert str(through["proxy"]) == "http://proxy.example:3128" and through["proxy_auth"].login == "user"
    assert proxy_for("http://127.0.0.1:8000/v1/chat/completions") == {}


def test_a_failing_request_is_retried_by_one_layer_only(tmp_path):
    """client_max_retries are the only retries of an HTTP request: the job's infra_retries do not
    multiply them (nested, they made up to 20 tries)."""
    with FakeServer() as server:
        server.faults = {"500": 100}
        cfg = config(tmp_path, server, "pattern=majority_first", "infra_retries=3", "model.client_max_retries=1")
        summary = run_job(cfg, tmp_path / "job")
        calls = len(server.log)
    assert summary.unstored == 2 and calls == 2 * 2  # two experiments, one try and one retry each


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_the_client_opens_while_the_claim_settles(tmp_path, monkeypatch, transport):
    """A job's HTTP client (aiohttp's import, a TLS context) is made while its new claim
    settles (no request may go out then), not after it, and making it sends nothing
    (a start-up placed after the wait had made it wait on nothing)."""
    from mip.store.claims import Claim
    from mip.models.transports import TRANSPORTS

    events: list[tuple[str, int]] = []
    with FakeServer() as server:
        cls = TRANSPORTS[transport]
        opened = cls.open

        async def spy_open(self):
            events.append(("open", len(server.bodies)))
            await opened(self)

        settled = Claim._tick

        def spy_tick(self, scan=False):
            if scan:  # the first request's settle scan: the wait is over
                events.append(("settled", len(server.bodies)))
            return settled(self, scan)

        monkeypatch.setattr(cls, "open", spy_open)
        monkeypatch.setattr(Claim, "_tick", spy_tick)
        cfg = config(tmp_path, server, "pattern=random", f"model.transport={transport}")
        os.makedirs(cfg.paths.store_dir)  # a store with no claims folder yet: this claim settles
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.stored_now == 6
    assert events[:2] == [("open", 0), ("settled", 0)]
