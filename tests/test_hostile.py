"""Hostile servers: each misbehaviour ends as the expected outcome within its
deadline, on both transports, and the API key never reaches another origin."""

from __future__ import annotations

import pytest

from mip.job import run_job
from mip.models import BackendSetupError, build_backend
from mip.store import Store

from .conftest import compose
from .hostile_server import HostileServer, Recorder

KEY = "sk-planted-0123456789abcdef"
TRANSPORTS = ["aiohttp", "openai"]


def config(tmp_path, server, transport, *more):
    return compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model", "model.tokenizer=null",
                   "model.api_key_env=MIP_HOSTILE_KEY", f"model.transport={transport}", "model.request_timeout_s=2",
                   "model.client_max_retries=0", "infra_retries=0", "model.max_response_bytes=1000000",
                   "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first", "progress=false",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *more)


@pytest.fixture(autouse=True)
def planted_key(monkeypatch):
    monkeypatch.setenv("MIP_HOSTILE_KEY", KEY)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("mode", "says"), [
    ("drip_body", "deadline (2 s)"),
    ("drip_headers", "deadline (2 s)"),
    ("endless", "max_response_bytes"),
    ("oversize", "max_response_bytes"),
    ("html", "no JSON"),
])
def test_a_hostile_reply_is_an_infrastructure_failure_never_a_verdict(tmp_path, mode, says, transport):
    with HostileServer(mode) as server:
        cfg = config(tmp_path, server, transport)
        summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 0 and summary.unstored == 2 and not summary.ok
    assert list(Store(cfg.paths.store_dir)) == []  # nothing scored
    assert any(says in error for error in summary.errors), summary.errors


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_content_as_text_parts_is_read_as_text(tmp_path, transport):
    with HostileServer("list_content") as server:
        cfg = config(tmp_path, server, transport)
        summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 2 and summary.verdicts == {"correct": 2}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_key_does_not_follow_a_redirect_to_another_origin(tmp_path, transport):
    with Recorder() as other, HostileServer("redirect", other=other) as server:
        summary = run_job(config(tmp_path, server, transport), tmp_path / "job")
        with HostileServer("redirect", other=other, on_models=True) as listing:
            with pytest.raises(BackendSetupError, match="another origin"):
                build_backend(config(tmp_path, listing, transport).model, tmp_path).check()
    assert summary.stored_now == 0 and summary.unstored == 2
    assert any("does not follow redirects" in e for e in summary.errors), summary.errors
    assert not any(KEY in value for headers in other.headers_seen for value in headers.values())
    assert server.headers_seen and all(h.get("authorization") == f"Bearer {KEY}" for h in server.headers_seen)


@pytest.mark.parametrize("mode", ["drip_body", "drip_headers", "endless", "oversize"])
def test_the_server_check_has_one_deadline_and_a_size_limit(tmp_path, mode):
    with HostileServer(mode, on_models=True) as server:
        backend = build_backend(config(tmp_path, server, "aiohttp").model, tmp_path)
        with pytest.raises(BackendSetupError, match="did not answer completely|max_response_bytes"):
            backend.check()


def test_an_unwritable_results_folder_is_one_line_before_any_job_folder(tmp_path):
    from .conftest import run_entry

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    for mode in ([], ["-m"]):
        proc = run_entry("run.py", *mode, "model=mock", "task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first",
                      env={"MIP_RESULTS_DIR": str(blocker / "results")})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert f"cannot write to the results folder {blocker / 'results'}" in proc.stderr


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_reply_escaping_a_lone_surrogate_is_read_as_json_and_stored_on_the_first_request(tmp_path, transport):
    with HostileServer("lone_surrogate") as server:
        cfg = config(tmp_path, server, transport)
        summary = run_job(cfg, tmp_path / "job")
        asked = server.chats
    assert summary.stored_now == 2 and summary.verdicts == {"correct": 2} and asked == 2  # one paid request each
    stored = [r.attempts[0].stages[0].reasoning for r in Store(cfg.paths.store_dir)]
    assert stored == ["Counting \ufffd every instance."] * 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_base_url_with_user_and_password_reaches_the_server(tmp_path, transport):
    """user:password@ goes as HTTP Basic authentication (as the openai SDK's httpx sends it), to
    the /models check and every request; the address itself is sent without them."""
    import base64

    with HostileServer("list_content") as server:
        cfg = config(tmp_path, server, transport,
                     f"model.base_url=http://mip:Uk7planted0userinfo0AbCd31@127.0.0.1:{server.port}/v1")
        summary = run_job(cfg, tmp_path / "job")
        headers, targets = list(server.headers_seen), list(server.targets_seen)
    assert summary.stored_now == 2 and summary.verdicts == {"correct": 2}, summary.errors
    basic = "Basic " + base64.b64encode(b"mip:Uk7planted0userinfo0AbCd31").decode()
    assert {h.get("authorization") for h in headers} == {basic}
    assert "/v1/models" in targets and targets.count("/v1/chat/completions") == 2
    written = [p for p in tmp_path.rglob("*") if p.is_file() and b"planted0userinfo" in p.read_bytes()]
    assert written == []
