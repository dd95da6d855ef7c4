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


SEVEN = "pattern=glob(*)"  # a seven-job sweep


def test_max_cost_below_the_expected_cost_refuses_the_sweep_before_any_request(results):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, SEVEN,
                        "max_cost=0.001", env=KEY)
    assert ran.returncode == 2 and server.requests == 0, (server.requests, ran.stderr[-1500:])
    line, = [x for x in ran.stderr.splitlines() if x.startswith("error:")]
    assert "expected to cost $0.00" in line and "more than max_cost=0.001" in line and "Nothing was launched" in line
    assert not list(results.rglob("job.json"))


def test_max_cost_refuses_a_single_run_before_any_request(results):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        ran = run_entry("run.py", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL,
                        "max_cost=0.00001", env=KEY)
    assert ran.returncode == 2 and server.requests == 0 and "more than max_cost=1e-05" in ran.stderr, ran.stderr


def test_a_costly_sweep_off_a_terminal_needs_the_cap_or_a_yes(results):
    """Over ``confirm_cost_above`` without max_cost and no terminal to ask on: refused, sending
    nothing; ``yes=true`` starts it."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        refused = run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL,
                            "pattern=random,majority_first", "confirm_cost_above=0.0001", env=KEY)
        assert refused.returncode == 2 and server.requests == 0, refused.stderr[-1500:]
        assert "no terminal to confirm it" in refused.stderr and "yes=true" in refused.stderr
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL,
                        "pattern=random,majority_first", "confirm_cost_above=0.0001", "yes=true", env=KEY)
    assert ran.returncode == 0, ran.stderr[-1500:]
    assert len(server.bodies) >= 2


def test_a_sweep_whose_reported_spend_reaches_max_cost_stops(results):
    """Each call reports $0.001 (usage.cost); under a cap of $0.004 the first job stops sending
    once four are reported, and the later jobs of the sweep send nothing."""
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"}, cost=0.001)}) as server:
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b", f"model.base_url={server.base_url}", *SMALL, SEVEN,
                        "max_cost=0.004", "model.max_concurrency=1", env=KEY)
    assert len(server.bodies) == 4, len(server.bodies)
    assert ran.returncode == 2, ran.stderr[-1500:]
    assert "max_cost reached" in ran.stderr and "max_cost reached" in ran.stdout  # the line, and the summary's list
