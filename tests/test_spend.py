"""The spend in the open: ``usage.cost`` read whatever its JSON type (OpenRouter sends a number,
https://openrouter.ai/docs/use-cases/usage-accounting; other gateways text), and shown beside the
expected cost by the run's summary, ``python -m mip.summary`` and analyze.py's report. Against
tests/openrouter_server.py; requests counted at the server."""

from __future__ import annotations

import json

from .conftest import run_entry
from .openrouter_server import OpenRouterServer, Provider

KEY = {"OPENROUTER_API_KEY": "sk-or-test"}
SMALL = ("task=arith", "setting=smoke", "budget=smoke", "progress=false")


def test_a_cost_given_as_text_reaches_the_summary_and_the_report_as_a_number(results, tmp_path):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"}, cost=0.00012)}, cost_as=str) as server:
        ran = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, env=KEY)
    assert ran.returncode == 0, ran.stderr[-2000:]
    calls = len(server.bodies)
    assert calls >= 1
    spent = f"spent ${calls * 0.00012:,.4f} as the provider reported it"
    assert spent in ran.stdout + ran.stderr and "expected cost $" in ran.stdout + ran.stderr
    job, = results.rglob("job.json")
    assert json.loads(job.read_text())["reported_cost_usd"] == round(calls * 0.00012, 10) or \
        abs(json.loads(job.read_text())["reported_cost_usd"] - calls * 0.00012) < 1e-12
    summary = run_entry("-m", "mip.summary", str(job.parent))
    assert summary.returncode == 0 and spent in summary.stdout, summary.stdout
    report = run_entry("analyze.py", f"results=[{results / 'store'}]", f"out_dir={tmp_path / 'out'}", "core=null")
    assert report.returncode == 0, report.stderr[-2000:]
    assert f"gpt_oss_120b ${calls * 0.00012:,.4f}" in (tmp_path / "out" / "report.md").read_text()
