"""Only a model's answer becomes a verdict: a 200 reply without a readable message
is an infrastructure failure on both transports, retried, left unstored and logged; a gzip
bomb is capped after decompression; a trace is stored once; an encoding error is named."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from mip.job import run_job
from mip.store import Store

from .conftest import REPO, compose, run_entry
from .stored import entries as stored_entries
from .fake_server import FakeServer
from .hostile_server import SHAPES, HostileServer

KEY = "sk-planted-0123456789abcdef"
TRANSPORTS = ["aiohttp", "openai"]


def config(tmp_path, server, transport, *more):
    return compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
                   "model.tokenizer=null", "model.api_key_env=MIP_HOSTILE_KEY", f"model.transport={transport}",
                   "model.request_timeout_s=5", "model.client_max_retries=1", "infra_retries=0",
                   "model.max_response_bytes=1000000", "task=arith", "setting=smoke", "budget=smoke",
                   "pattern=majority_first", "progress=false", f"paths.results_dir={tmp_path}",
                   f"paths.cache_dir={tmp_path / 'cache'}", *more)


@pytest.fixture(autouse=True)
def planted_key(monkeypatch):
    monkeypatch.setenv("MIP_HOSTILE_KEY", KEY)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_reply_without_a_readable_message_is_retried_and_never_stored(tmp_path, shape, transport, caplog):
    with HostileServer("shape", shape=shape) as server, caplog.at_level(logging.WARNING, "mip.models"):
        cfg = config(tmp_path, server, transport)
        summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 0 and summary.unstored == 2 and summary.verdicts == {}
    assert list(Store(cfg.paths.store_dir)) == []  # no invalid/parse verdict for a rerun to reuse
    assert server.chats == 4  # retried: two tries for each of the two experiments
    assert sum("no model's answer" in e for e in summary.errors) == 2, summary.errors
    logged = [r.getMessage() for r in caplog.records if "The reply's first" in r.getMessage()]
    assert len(logged) == 4 and all('"choices"' in m for m in logged)  # the raw body, in the log
    assert all("Bearer ***" in m and KEY not in m for m in logged)  # echoed key masked


def test_the_raw_body_of_a_malformed_reply_is_in_the_jobs_run_log(tmp_path):
    with HostileServer("shape", shape="number_content") as server:
        proc = run_entry("run.py", "model=smollm2_135m_server", f"model.base_url={server.base_url}",
                         "model.model_id=fake-model", "model.tokenizer=null", "model.api_key_env=MIP_HOSTILE_KEY",
                         "model.client_max_retries=0", "infra_retries=0", "task=arith", "setting=smoke", "budget=smoke",
                         "pattern=majority_first", "progress=false",
                         env={"MIP_RESULTS_DIR": str(tmp_path / "results"), "MIP_HOSTILE_KEY": KEY})
    assert proc.returncode != 0, proc.stderr[-2000:]  # experiments left unstored: not ok
    (log,) = list((tmp_path / "results").rglob("run.log"))
    text = log.read_text()
    assert "its content is int '42'" in text and "The reply's first" in text and '"content": 42' in text
    assert KEY not in text and "Bearer ***" in text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("mode", "says"), [
    ("gzip_bomb", "max_response_bytes"),
    ("latin1", "not UTF-8: an encoding error at byte"),
])
def test_a_bomb_or_a_foreign_encoding_is_an_infrastructure_failure(tmp_path, mode, says, transport):
    with HostileServer(mode, bomb_bytes=64 * 2**20) as server:
        cfg = config(tmp_path, server, transport, "model.client_max_retries=0")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 0 and summary.unstored == 2 and list(Store(cfg.paths.store_dir)) == []
    assert sum(says in e for e in summary.errors) == 2, summary.errors
    assert not any("web page" in e for e in summary.errors)


# Runs in a process of its own, so that its peak RSS (ru_maxrss) is the reply's alone.
BOMB = """
import json, resource, sys
from pathlib import Path
from mip.config import OpenAICompatModelConfig
from mip.models import BackendContext, Request
from mip.models.openai_compat import OpenAICompatBackend

url, transport = sys.argv[1], sys.argv[2]
cfg = OpenAICompatModelConfig(name="bomb", backend="openai_compat", model_id="fake-model", context_window=8192,
                              base_url=url, transport=transport, max_response_bytes=4 * 2**20, client_max_retries=0,
                              request_timeout_s=120)
backend = OpenAICompatBackend(cfg, BackendContext(Path(".")))
backend._encode(Request("warm", "hi", 8))  # the client and its imports, before the baseline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
(completion,) = backend.generate([Request("r", "Instance 1: What is 2 + 2?", 8)])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
backend.close()
print(json.dumps({"error": completion.error, "grew_mb": (after - before) / 1024}))
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_gzip_bomb_keeps_memory_bounded(transport):
    """~1 MB on the wire that is 1 GiB decompressed: the reply fails at max_response_bytes (4 MiB
    here) and the process grows by a few MB, not by the gigabyte (a reader that decompressed it whole grew by 3.2 GB)."""
    with HostileServer("gzip_bomb", bomb_bytes=2**30) as server:
        proc = subprocess.run([sys.executable, "-c", BOMB, server.base_url, transport], cwd=REPO, capture_output=True,
                              text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "max_response_bytes" in result["error"]
    assert result["grew_mb"] < 128, result  # 4 MiB kept, plus a bounded chunk being decompressed


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_trace_in_reasoning_and_reasoning_details_is_stored_once(tmp_path, transport):
    with FakeServer(reasoning_shape="both", trace_chars=400_000) as server:
        cfg = config(tmp_path, server, transport, "model.max_response_bytes=4000000")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.verdicts == {"correct": 2}
    lines = stored_entries(Store(cfg.paths.store_dir).root)
    for record in Store(cfg.paths.store_dir):
        stage = record.attempts[0].stages[0]
        assert len(stage.reasoning) >= 399_000 and stage.reasoning_from == ["reasoning", "reasoning_details"]
        assert stage.reasoning_raw == {"reasoning_details": [{"type": "reasoning.text", "format": "unknown", "index": 0}]}
    sizes = [len(line.data) for line in lines if len(line.data) > 100_000]
    assert len(sizes) == 2 and all(s < 600_000 for s in sizes), sizes  # one 400 KB trace each, not two
