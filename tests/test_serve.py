"""A job end to end through a real `transformers serve`, with mip's client and with the real openai SDK."""

from __future__ import annotations

import re

import pytest

from mip.store import Store

from .conftest import run_py


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_job_through_transformers_serve_then_rerun_calls_nothing(results, smollm2_server, transport):
    args = ["model=smollm2_135m_server", f"model.base_url={smollm2_server}", "task=arith", "setting=smoke",
            "budget=smoke", "budget.max_tokens=24", "pattern=majority_first", "progress=false",
            f"model.transport={transport}"]
    first = run_py(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    records = list(Store(results / "store"))
    assert len(records) == 2
    for record in records:
        stage = record.attempts[0].stages[-1]
        assert stage.output and stage.served_model and stage.served_model.endswith("smollm2_135m")
        assert stage.usage["prompt_tokens"] > 200 and stage.finish_reason in ("stop", "length")
        assert record.verdict in ("correct", "incorrect", "invalid")
    second = run_py(*args)
    assert second.returncode == 0
    assert re.search(r"2 already stored, 0 stored now", second.stdout)
