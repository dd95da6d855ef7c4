"""preflight=only|required through run.py, against a local server that routes and refuses as
OpenRouter documents it (tests/openrouter_server.py cites the pages)."""

from __future__ import annotations

import json

import pytest

from mip.job.tokens import context_for
from mip.models.chat_api import request_body

from .conftest import compose, local_models, run_entry
from .openrouter_server import OpenRouterServer, Provider

KEY = {"OPENROUTER_API_KEY": "sk-or-test"}
ALL = {"temperature", "max_tokens", "reasoning"}


def _stored(results, model: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / "preflight" / model).glob("*.json"))]


def job_body(cfg) -> dict:
    """What a job of ``cfg`` sends for a short prompt (its builders, as the job loop calls them)."""
    return request_body(cfg.model, context_for(cfg, None).request("k", "Instance 1: …", 100))


def _without_messages(body: dict) -> dict:
    return {k: v for k, v in body.items() if k != "messages"}


def test_one_request_per_model_with_the_sweeps_body_and_what_it_tells(results, tmp_path):
    providers = {"DeepInfra": Provider({"temperature", "max_tokens"}),
                 "Alibaba": Provider(ALL, counts_reasoning=False)}
    with OpenRouterServer(providers, think_tokens=30000) as server:
        searchpath = local_models(tmp_path, server.base_url, "gpt_oss_120b", "qwen36_plus")
        ran = run_entry("run.py", "-m", "model=gpt_oss_120b_local,qwen36_plus_local", "pattern=random,majority_first",
                        "seed=0,1", "budget=20k", searchpath, "preflight=only", env=KEY)
    assert ran.returncode == 1, ran.stderr  # Qwen3.6-Plus's split budget, unbounded there: below
    assert len(server.bodies) == 2  # one per model, not one per job (8 jobs)
    assert not (results / "store").exists() and not (results / "sweeps").exists() or \
        not any((results / "sweeps").rglob("manifest.json"))  # no job ran
    lines = [line for line in ran.stdout.splitlines() if ": PASS" in line or ": FAIL" in line]
    assert len(lines) == 2 and all("served by" in line for line in lines)
    for model in ("gpt_oss_120b", "qwen36_plus"):
        cfg = compose(f"model={model}", "budget=20k", f"model.base_url={server.base_url}")
        sent = next(b for b in server.bodies if b["model"] == cfg.model.model_id)
        assert _without_messages(sent) == _without_messages(job_body(cfg)) == _stored(results, model)[0]["body"]
    gpt, = _stored(results, "gpt_oss_120b")
    assert gpt["status"] == 200 and gpt["passed"] and gpt["provider"] == "DeepInfra"
    assert gpt["reasoning_in"] == ["reasoning", "reasoning_details"] and gpt["cost_usd"] == 0.0004
    assert gpt["max_tokens_counts_reasoning"] == "yes" and gpt["completion_tokens"] == 20000
    qwen, = _stored(results, "qwen36_plus")
    assert qwen["body"]["provider"] == {"order": ["Alibaba"], "allow_fallbacks": False, "require_parameters": True}
    assert qwen["max_tokens"] == 20000 and qwen["reasoning_budget"] == 19980
    assert qwen["max_tokens_counts_reasoning"] == "no" and "about 39,980" in qwen["counting"]
    assert qwen["reasoning_tokens"] == 19980 and qwen["answer_tokens"] == 400
    assert qwen["passed"] is False and "not the budget's 20,000 (App. C.2)" in qwen["why"]
    assert "model.budget_split.max_tokens_counts_reasoning=false" in qwen["why"]


def test_a_split_budget_is_bounded_as_app_c2_says_where_the_provider_does_not_count_reasoning(results, tmp_path):
    """Alibaba (as the local server has it) gives the answer max_tokens of its own: with the
    rule set, max_tokens is the 20-token answer budget and all output stays within 20K."""
    alibaba = {"Alibaba": Provider(ALL, counts_reasoning=False)}
    with OpenRouterServer(alibaba, model="qwen/qwen3.6-plus", think_tokens=30000) as server:
        args = ("model=qwen36_plus", f"model.base_url={server.base_url}", "budget=20k", "task=arith", "setting=smoke")
        ran = run_entry("run.py", *args, "model.budget_split.max_tokens_counts_reasoning=false", "preflight=only",
                        env=KEY)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    found, = _stored(results, "qwen36_plus")
    assert found["body"]["max_tokens"] == 20 and found["body"]["reasoning"]["max_tokens"] == 19980
    assert found["completion_tokens"] == 20000 and found["passed"]
    with OpenRouterServer({"Alibaba": Provider(ALL)}, model="qwen/qwen3.6-plus", think_tokens=30000) as server:
        counts = run_entry("run.py", "model=qwen36_plus", f"model.base_url={server.base_url}", "budget=20k",
                           "task=arith", "setting=smoke", "model.budget_split.max_tokens_counts_reasoning=false",
                           "preflight=only", env=KEY)
    assert counts.returncode == 1 and "counts reasoning in max_tokens" in counts.stdout


def test_a_smoke_preflight_settles_the_split_budget_for_a_larger_budget(results):
    """At 20K the model stops on its own (undecided: the 20K preflight fails and says which
    preflight settles it); a smoke preflight is cut at max_tokens, and the 20K preflight after it
    takes that verdict, passes, and lets the 20K job run under preflight=required."""
    with OpenRouterServer({"Alibaba": Provider(ALL)}, model="qwen/qwen3.6-plus") as server:
        args = ("model=qwen36_plus", f"model.base_url={server.base_url}", "task=arith", "setting=smoke",
                "progress=false")
        alone = run_entry("run.py", *args, "budget=20k", "preflight=only", env=KEY)
        both = run_entry("run.py", "-m", *args, "budget=smoke,20k", "preflight=only", env=KEY)
        ran = run_entry("run.py", *args, "budget=20k", "preflight=required", env=KEY)
    assert alone.returncode == 1 and "run -m budget=smoke,20k preflight=only" in alone.stdout, alone.stdout
    assert both.returncode == 0, both.stdout + both.stderr
    smoke, large = sorted((f for f in _stored(results, "qwen36_plus") if f["passed"]), key=lambda f: f["max_tokens"])
    assert smoke["max_tokens"] == 320 and smoke["max_tokens_counts_reasoning"] == "yes"
    assert large["max_tokens"] == 20000 and large["max_tokens_counts_reasoning"] == "yes"
    assert "settled by the preflight" in large["counting"]
    assert ran.returncode == 0, ran.stderr


def test_a_trace_model_fails_the_preflight_when_no_reasoning_comes_back(results):
    with OpenRouterServer({"DeepSeek": Provider(ALL, reasoning=False)}, model="deepseek/deepseek-v4-flash") as server:
        ran = run_entry("run.py", "model=deepseek_v4_flash", f"model.base_url={server.base_url}", "budget=smoke",
                        "task=arith", "setting=smoke", "preflight=only", env=KEY)
    assert ran.returncode == 1 and "reasoning in none" in ran.stdout
    assert "the config says traces: full, but no reasoning came back" in ran.stdout
    assert server.bodies[0]["reasoning"] == {"enabled": True}  # the DeepSeek V4 configs ask for it
    assert job_body(compose("model=deepseek_v4_pro", "budget=smoke"))["reasoning"] == {"enabled": True}


@pytest.mark.parametrize("override, env, status, said", [
    # require_parameters with a parameter the pinned provider lacks: OpenRouter's 404
    ("+model.reasoning.effort=high", KEY, 404, "No endpoints found that can handle the requested parameters"),
    ("model.provider.order=[DeepInfro]", KEY, 400, "check the names in model.provider.order"),
    ("seed=0", {"OPENROUTER_API_KEY": "sk-or-wrong"}, 401, "the key in $OPENROUTER_API_KEY was refused"),
])
def test_a_documented_refusal_fails_the_preflight_and_required_then_refuses_the_sweep(results, override, env, status, said):
    with OpenRouterServer({"DeepInfra": Provider({"temperature", "max_tokens"})}) as server:
        args = ("model=gpt_oss_120b", f"model.base_url={server.base_url}", "task=arith", override)
        ran = run_entry("run.py", *args, "preflight=only", env=env)
        sent = len(server.bodies)
        refused = run_entry("run.py", "-m", *args, "pattern=random,majority_first", "preflight=required", env=env)
    assert ran.returncode == 1 and f"FAIL HTTP {status}" in ran.stdout and said in ran.stdout
    found, = _stored(results, "gpt_oss_120b")
    assert found["status"] == status and found["passed"] is False
    assert refused.returncode == 2 and len(server.bodies) == sent  # nothing sent, nothing launched
    assert refused.stderr.count("error:") == 1 and "no passing preflight on file for gpt_oss_120b" in refused.stderr


def test_required_lets_a_job_run_after_a_pass_and_refuses_a_changed_body(results):
    with OpenRouterServer({"DeepInfra": Provider(ALL)}) as server:
        args = ("model=gpt_oss_120b", f"model.base_url={server.base_url}", "budget=smoke", "task=arith",
                "setting=smoke", "progress=false")
        assert run_entry("run.py", *args, "preflight=only", env=KEY).returncode == 0
        ran = run_entry("run.py", *args, "preflight=required", env=KEY)
        changed = run_entry("run.py", *args, "model.provider.require_parameters=false", "preflight=required", env=KEY)
        dry = run_entry("run.py", *args, "model.provider.require_parameters=false", "preflight=required",
                        "dry_run=true", env=KEY)
    assert ran.returncode == 0, ran.stderr
    assert any("Instance" in b["messages"][-1]["content"] for b in server.bodies)  # the job ran
    assert changed.returncode == 2 and "no passing preflight" in changed.stderr
    assert dry.returncode == 0  # a dry run spends nothing


def test_a_preflight_records_its_endpoint_and_model_settings_and_is_used_only_while_young(results):
    """The file records the (masked) base URL and the answer-shaping model settings; an older
    one than ``preflight_max_age_days`` lets no job run, and the refusal says why."""
    from mip.job.preflight_match import model_settings

    with OpenRouterServer({"DeepInfra": Provider(ALL)}) as server:
        args = ("model=gpt_oss_120b", f"model.base_url={server.base_url}", "budget=smoke", "task=arith",
                "setting=smoke", "progress=false")
        assert run_entry("run.py", *args, "preflight=only", env=KEY).returncode == 0
        sent = len(server.bodies)
        stale = run_entry("run.py", *args, "preflight=required", "preflight_max_age_days=0", env=KEY)
    found, = _stored(results, "gpt_oss_120b")
    assert found["base_url"] == server.base_url
    assert found["settings"] == model_settings(compose(*args[:3])) and found["settings"]
    assert stale.returncode == 2 and len(server.bodies) == sent, stale.stderr  # nothing sent
    assert "older than preflight_max_age_days=0" in stale.stderr and stale.stderr.count("error:") == 1


def test_a_preflight_of_an_older_mip_or_another_endpoint_is_not_used(results):
    """A preflight file without recorded settings lets no job run; a dry run does not take its
    measured price from a preflight sent to another endpoint, and says so."""
    with OpenRouterServer({"Alibaba": Provider(ALL)}, model="qwen/qwen3.6-plus") as server:
        args = ("model=qwen36_plus", "budget=smoke", "task=arith", "setting=smoke", "progress=false")
        here = f"model.base_url={server.base_url}"
        assert run_entry("run.py", *args, here, "preflight=only", env=KEY).returncode == 0
        path, = (results / "preflight" / "qwen36_plus").glob("*.json")
        dry = run_entry("run.py", *args, "model.base_url=http://127.0.0.1:9/v1", "dry_run=true", env=KEY)
        old = json.loads(path.read_text())
        del old["settings"]
        path.write_text(json.dumps(old))
        gate = run_entry("run.py", *args, here, "preflight=required", env=KEY)
    said = dry.stdout + dry.stderr
    assert dry.returncode == 0 and "measured by the preflight" not in said and "cost unknown" in said, said
    assert f"sent to {server.base_url}, not http://127.0.0.1:9/v1" in said
    assert gate.returncode == 2 and "recorded no model settings" in gate.stderr, gate.stderr


def test_a_missing_key_is_one_line(results):
    ran = run_entry("run.py", "model=gpt_oss_120b", "preflight=only", env={"OPENROUTER_API_KEY": ""})
    assert ran.returncode == 2 and ran.stderr.strip().count("\n") == 0 and "OPENROUTER_API_KEY" in ran.stderr


def test_googles_refusal_of_a_key_is_named(results):
    with OpenRouterServer({"Google": Provider(set())}, model="gemini-3.1-pro-preview", google=True) as server:
        ran = run_entry("run.py", "model=gemini31_pro", f"model.base_url={server.base_url}", "budget=smoke",
                        "preflight=only", env={"GEMINI_API_KEY": "wrong"})
    assert ran.returncode == 1 and "FAIL HTTP 400" in ran.stdout
    assert "API key not valid" in ran.stdout and "the key in $GEMINI_API_KEY was refused" in ran.stdout


def test_thoughts_inline_in_the_content_are_named(results):
    with OpenRouterServer({"Google": Provider(set())}, model="gemini-3.1-pro-preview", inline_thoughts=True) as server:
        ran = run_entry("run.py", "model=gemini31_pro", f"model.base_url={server.base_url}", "budget=smoke",
                        "preflight=only", env={"GEMINI_API_KEY": "sk-or-test"})
    assert ran.returncode == 0, ran.stderr + ran.stdout
    found, = _stored(results, "gemini31_pro")
    assert found["reasoning_in"] == ["inline"] and "max_completion_tokens" in found["body"]


def test_backends_with_nothing_to_pay_for_say_so(results):
    ran = run_entry("run.py", "-m", "model=qwen36_35b,mock", "preflight=only")
    assert ran.returncode == 0, ran.stderr
    assert "qwen36_35b: vllm runs on your own GPU, nothing to pay for: preflight is a no-op" in ran.stdout
    assert "mock: backend mock calls no paid API, nothing to pay for" in ran.stdout
    assert not (results / "preflight").exists()


def test_an_unknown_mode_is_one_line(results):
    ran = run_entry("run.py", "model=mock", "preflight=yes")
    assert ran.returncode == 2 and "choose off, only or required" in ran.stderr


# ---------------------------------------------------------------- the gate fails closed

def _fake_sbatch(tmp_path) -> tuple[dict, object]:
    """A ``sbatch`` first on PATH that records each call and submits nothing."""
    folder, log = tmp_path / "bin", tmp_path / "sbatch.log"
    folder.mkdir()
    (folder / "sbatch").write_text(f"#!/bin/sh\necho \"$@\" >> {log}\necho 'Submitted batch job 1'\n")
    (folder / "sbatch").chmod(0o755)
    (folder / "srun").write_text("#!/bin/sh\nexit 1\n")  # submitit looks for it before it submits
    (folder / "srun").chmod(0o755)
    import os
    return {"PATH": f"{folder}:{os.environ['PATH']}"}, log


def _local_default(tmp_path) -> str:
    """docs/running.md's other way: ``hydra.launcher.partition`` in a ``local/default.yaml`` (in a
    search path here, as the repository's own conf/local/ is the user's)."""
    local = tmp_path / "site" / "local"
    local.mkdir(parents=True)
    (local / "default.yaml").write_text("# @package _global_\nhydra:\n  launcher:\n    partition: debug\n")
    return f"hydra.searchpath=[file://{tmp_path / 'site'}]"


@pytest.mark.parametrize("how", ["environment", "local_default"])
@pytest.mark.parametrize("mode", ["required", "only"])
def test_a_sweep_with_a_cluster_partition_submits_nothing_without_a_passing_preflight(results, tmp_path, how, mode):
    """With the partition set as docs/running.md says (``MIP_SLURM_PARTITION``), or in a
    local/default.yaml, and no preflight on file: ``preflight=required`` stops with one line and
    exit 2, ``preflight=only`` sends its one request and ends; neither calls sbatch."""
    env, log = _fake_sbatch(tmp_path)
    extra: tuple[str, ...] = ()
    if how == "environment":
        env["MIP_SLURM_PARTITION"] = "debug"
    else:
        extra = (_local_default(tmp_path),)
    with OpenRouterServer({"DeepInfra": Provider(ALL)}) as server:
        ran = run_entry("run.py", "-m", "hydra/launcher=slurm_cpu", "model=gpt_oss_120b",
                        f"model.base_url={server.base_url}", "budget=smoke", "task=arith", "setting=smoke",
                        "pattern=random,majority_first", *extra, f"preflight={mode}", env={**KEY, **env})
    assert not log.exists(), log.read_text()  # sbatch never called
    if mode == "required":
        assert ran.returncode == 2 and ran.stderr.count("error:") == 1, ran.stderr
        assert "no passing preflight on file for gpt_oss_120b" in ran.stderr and not server.bodies
    else:
        assert ran.returncode == 0, ran.stderr + ran.stdout
        assert len(server.bodies) == 1 and ": PASS" in ran.stdout


def test_an_error_while_checking_stops_the_sweep(results, tmp_path, monkeypatch):
    """Any error of the gate's own (here: its composition) is one line and exit 2, never a
    warning that lets the sweep go on."""
    from mip.entry import preflight_hook

    def broken(config):
        raise ValueError("Key 'partition' not in 'BasicLauncherConf'")
        yield

    monkeypatch.setattr(preflight_hook, "sweep_configs", broken)
    env, log = _fake_sbatch(tmp_path)
    ran = run_entry("run.py", "-m", "hydra/launcher=slurm_cpu", "model=gpt_oss_120b", "task=arith", "setting=smoke",
                    "pattern=random,majority_first", "preflight=required", env={**KEY, **env, "MIP_SLURM_PARTITION": "debug"})
    assert ran.returncode == 2 and ran.stderr.count("error:") == 1, ran.stderr
    assert "preflight could not be checked" in ran.stderr and "Key 'partition'" in ran.stderr
    assert not log.exists()


# ---------------------------------------------------------------- temperature, a model setting

GPT5_REFUSAL = "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default (1) value is supported."


def test_temperature_is_a_model_setting_in_the_body_and_the_key():
    from mip.experiment.keys import answer_settings

    bodies, settings = {}, {}
    for value in ("0.0", "0.7", "null"):
        cfg = compose("model=gpt_oss_120b", "budget=20k", f"model.temperature={value}")
        bodies[value], settings[value] = job_body(cfg), answer_settings(cfg)
    assert bodies["0.0"]["temperature"] == 0.0 and bodies["0.7"]["temperature"] == 0.7
    assert "temperature" not in bodies["null"]  # left out: the provider's default
    assert "temperature" not in settings["0.0"]["model"]  # the paper's 0: keys as before
    assert len({json.dumps(s, sort_keys=True) for s in settings.values()}) == 3  # each another experiment
    assert "temperature" not in job_body(compose("model=gpt54_nano", "budget=20k"))  # what OpenAI accepts


def test_a_gpt5_style_temperature_refusal_is_named_by_the_preflight(results):
    """OpenAI refuses a non-default temperature on the GPT-5 family; OpenRouter passes the
    refusal on wrapped (tests/openrouter_server.py)."""
    openai = Provider({"max_tokens", "reasoning", "temperature"}, rejects={"temperature": GPT5_REFUSAL})
    with OpenRouterServer({"OpenAI": openai}, model="openai/gpt-5.4-nano") as server:
        args = ("model=gpt54_nano", f"model.base_url={server.base_url}", "budget=smoke", "task=arith", "setting=smoke")
        refused = run_entry("run.py", *args, "model.temperature=0", "preflight=only", env=KEY)
        passed = run_entry("run.py", *args, "preflight=only", env=KEY)
    assert refused.returncode == 1 and "FAIL HTTP 400" in refused.stdout, refused.stdout + refused.stderr
    assert "rejected the parameter 'temperature'" in refused.stdout and "model.temperature=null" in refused.stdout
    assert passed.returncode == 0 and ": PASS" in passed.stdout, passed.stdout + passed.stderr


# ---------------------------------------------------------------- costs from the provider

def test_a_dry_run_after_a_preflight_prices_a_model_without_a_configured_price(results):
    """OpenRouter's usage accounting reports the request's cost (usage.cost) and its own count
    of prompt tokens; qwen36_plus ships no price and no tokenizer."""
    with OpenRouterServer({"Alibaba": Provider(ALL)}, model="qwen/qwen3.6-plus") as server:
        args = ("model=qwen36_plus", f"model.base_url={server.base_url}", "budget=smoke", "task=arith", "setting=smoke")
        before = run_entry("run.py", *args, "dry_run=true", env=KEY)
        flight = run_entry("run.py", *args, "preflight=only", env=KEY)
        dry = run_entry("run.py", *args, "dry_run=true", env=KEY)
    assert "cost unknown" in before.stdout + before.stderr
    assert flight.returncode == 0, flight.stdout + flight.stderr
    found, = _stored(results, "qwen36_plus")
    assert found["prompt_tokens"] == 60 and found["cost_usd"] == 0.0004 and found["prompt_chars"] > 60
    said = dry.stdout + dry.stderr
    assert dry.returncode == 0 and "cost unknown" not in said, said
    per_mtok = round(0.0004 / found["completion_tokens"] * 1e6, 4)
    assert "expected cost $" in said and f"${per_mtok:g} per million tokens" in said
    assert f"{round(found['prompt_chars'] / 60, 2):g} characters a token" in said
    assert f"measured by the preflight of {found['when']}" in said
    assert "an upper bound" in said  # only a total cost known: input priced as output


def test_listed_prompt_and_completion_prices_price_input_and_output_apart(results):
    """OpenRouter's model listing gives each model ``pricing.prompt`` and ``pricing.completion``,
    USD per token as strings (https://openrouter.ai/docs/api-reference/list-available-models),
    and usage accounting the request's cost (https://openrouter.ai/docs/use-cases/usage-accounting):
    the dry run prices input and output apart, says where the prices come from, and checks them
    against the reported cost; no "upper bound" for the price."""
    pricing = {"prompt": "0.0000004", "completion": "0.0000024", "request": "0", "image": "0"}
    with OpenRouterServer({"Alibaba": Provider(ALL, cost=None)}, model="qwen/qwen3.6-plus", pricing=pricing) as server:
        args = ("model=qwen36_plus", f"model.base_url={server.base_url}", "budget=smoke", "task=arith", "setting=smoke")
        flight = run_entry("run.py", *args, "preflight=only", env=KEY)
        found, = _stored(results, "qwen36_plus")
        server.providers["Alibaba"].cost = (60 * 0.4 + found["completion_tokens"] * 2.4) / 1e6
        again = run_entry("run.py", *args, "preflight=only", env=KEY)
        dry = run_entry("run.py", *args, "dry_run=true", env=KEY)
    assert flight.returncode == 0 and again.returncode == 0, flight.stdout + flight.stderr
    assert found["listed_prompt_per_mtok"] == 0.4 and found["listed_completion_per_mtok"] == 2.4
    assert found["listed_from"] == f"{server.base_url}/models"
    said = dry.stdout + dry.stderr
    assert dry.returncode == 0 and "cost unknown" not in said, said
    assert f"$0.4 input and $2.4 output per million tokens, as {server.base_url}/models lists them" in said
    assert ": as listed)" in said and "upper bound" not in said


def test_a_configured_price_is_kept_and_the_listing_not_read(results):
    """A config's own price wins: the preflight does not read the listing for it."""
    pricing = {"prompt": "0.0000004", "completion": "0.0000024"}
    with OpenRouterServer({"Alibaba": Provider(ALL)}, model="qwen/qwen3.6-plus", pricing=pricing) as server:
        args = ("model=qwen36_plus", f"model.base_url={server.base_url}", "budget=smoke", "task=arith", "setting=smoke",
                "model.price_input_per_mtok=1", "model.price_output_per_mtok=3")
        flight = run_entry("run.py", *args, "preflight=only", env=KEY)
    assert flight.returncode == 0, flight.stdout + flight.stderr
    found, = _stored(results, "qwen36_plus")
    assert found["listed_prompt_per_mtok"] is None and not any(t.endswith("/models") for t in server.targets_seen)
