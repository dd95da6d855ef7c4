"""No file holds a secret: a key pasted into a config, under a key named like a
credential or in place of a variable's name, or equal to the value of the variable
``api_key_env`` names, is masked in every file a job writes (config.yaml, .hydra/,
multirun.yaml, run.log, job.json, records, W&B) and in what it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_entry, run_py
from .fake_server import FakeServer
from .test_store_trust import server_args

PASTED = "sk-planted-extra-0001"  # under a key named like a credential
IN_ENV = "sk-planted-env-0002"  # the value of the variable api_key_env names, also pasted elsewhere


def files_holding(folder: Path, *secrets: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold one of ``secrets``."""
    return sorted(f"{p}: {s}" for p in folder.rglob("*") if p.is_file() for s in secrets if s.encode() in p.read_bytes())


def test_planted_keys_reach_no_file_a_sweep_writes(results):
    with FakeServer() as server:
        out = run_py("-m", *server_args(server, "pattern=majority_first", f"+model.extra_body.api_key={PASTED}",
                                        f"+model.extra_body.user={IN_ENV}", "model.api_key_env=MIP_TEST_KEY",
                                        "logger=wandb", "logger.mode=offline"),
                     env={"MIP_TEST_KEY": IN_ENV})
        sent = server.bodies
        headers = server.headers_seen
    assert out.returncode == 0, out.stderr[-3000:]
    assert sent and sent[0]["api_key"] == PASTED and sent[0]["user"] == IN_ENV  # the job did use them
    assert any(h.get("authorization") == f"Bearer {IN_ENV}" for h in headers)
    written = {p.name for p in results.rglob("*") if p.is_file()}
    assert {"config.yaml", "overrides.yaml", "hydra.yaml", "multirun.yaml", "run.log", "job.json"} <= written
    assert any(p.suffix == ".wandb" for p in results.rglob("*"))  # W&B's offline files are searched too
    assert files_holding(results, PASTED, IN_ENV) == []
    assert PASTED not in out.stdout + out.stderr and IN_ENV not in out.stdout + out.stderr


@pytest.mark.parametrize("pasted", ["sk-or-v1-pasted-0003", "sk_live_51HpastedNoDash0010",  # with a dash, without
                                    "AIzaSyPastedGoogleKey00011abcdEFGH"])
def test_a_key_pasted_as_the_variable_name_is_refused_without_echoing_it(results, pasted):
    out = run_entry("run.py", "model=smollm2_135m_server", "model.base_url=http://127.0.0.1:9/v1", "model.model_id=m",
                    "model.tokenizer=null", "task=arith", "n=20", "p=0.6", "budget=smoke", "pattern=majority_first",
                    "progress=false", f"model.api_key_env={pasted}")
    assert out.returncode == 2 and out.stderr.count("error:") == 1, out.stderr[-2000:]
    assert "must name an environment variable" in out.stderr
    assert pasted not in out.stdout + out.stderr
    assert files_holding(results, pasted) == []


def test_what_is_masked():
    from mip.config.redact import redact, secret_key, secret_values

    assert [secret_key(k) for k in ("api_key", "API-KEY", "x_auth_token", "client_secret", "mysecretthing",
                                    "Authorization", "db_password", "max_tokens", "tokenizer", "api_key_env")] == \
        [True, True, True, True, True, True, True, False, False, False]
    plain = {"model": {"api_key_env": "NOT_SET_ANYWHERE_0", "tokenizer": "HuggingFaceTB/x", "extra": ["a", "sk-12345"]},
             "hf_token_env": "sk-12345"}
    assert secret_values(plain) == {"sk-12345"}
    assert redact(plain) == {"model": {"api_key_env": "NOT_SET_ANYWHERE_0", "tokenizer": "HuggingFaceTB/x",
                                       "extra": ["a", "***"]}, "hf_token_env": "***"}


# Keys that no key name gives away: in the base URL's query (typed, and from
# MIP_SERVER_URL), in its userinfo, under extra_body.key / extra_body.auth, and a value that looks
# like a key under an ordinary name.
IN_QUERY = "Qk7planted0query0AbCdEf04"
IN_ENV_QUERY = "Ek7planted0envurl0AbCdEf05"
IN_USERINFO = "Uk7planted0userinfo0AbCd06"
UNDER_AUTH = "planted-auth-value-0007"
UNDER_KEY = "planted-key-value-0008"
BY_LOOK = "sk-ant-planted-look-0009"


def test_keys_in_urls_and_body_fields_reach_no_file_of_a_sweep(results):
    """Keys in the base URL's query and in extra_body.auth — and the
    other key-bearing places — are found in 0 files of a sweep, W&B's offline files included,
    nor in what it prints."""
    with FakeServer() as server:
        common = ["model=smollm2_135m_server", "model.model_id=fake-model", "model.tokenizer=null", "task=arith", "n=20",
                  "p=0.6", "budget=smoke", "progress=false", "logger=wandb", "logger.mode=offline"]
        typed = run_py("-m", *common, "pattern=majority_first,majority_last", f"model.base_url='{server.base_url}?key={IN_QUERY}'",
                       f"+model.extra_body.auth={UNDER_AUTH}", f"+model.extra_body.key={UNDER_KEY}",
                       f"+model.extra_body.user={BY_LOOK}")
        server.faults = {"302": 1}  # the first call of each prompt: an error that names the URL (in job.json)
        from_env = run_py("-m", *common, "pattern=majority_edges,majority_middle",
                          env={"MIP_SERVER_URL": f"{server.base_url}?token={IN_ENV_QUERY}"})
        server.faults = {}
        # A base URL with a user and password (a proxy's basic auth): sent as HTTP Basic authentication.
        userinfo = run_py(*common, "pattern=soft_majority_edges",
                          f"model.base_url='http://mip:{IN_USERINFO}@127.0.0.1:{server.port}/v1'")
        targets, sent, headers = list(server.targets_seen), server.bodies, list(server.headers_seen)
    assert typed.returncode == 0, typed.stderr[-3000:]
    assert from_env.returncode == 1, from_env.stderr[-3000:]  # its experiments met the redirect: left unstored
    assert "?token=*** redirects to https://moved.example" in "".join(p.read_text() for p in results.rglob("job.json"))
    assert userinfo.returncode == 0, userinfo.stderr[-3000:]
    assert any(h.get("authorization", "").startswith("Basic ") for h in headers)
    assert any(t.endswith(f"/v1/chat/completions?key={IN_QUERY}") for t in targets)  # the jobs did send them
    assert any(t.endswith(f"/v1/chat/completions?token={IN_ENV_QUERY}") for t in targets)
    assert sent[0]["auth"] == UNDER_AUTH and sent[0]["key"] == UNDER_KEY and sent[0]["user"] == BY_LOOK
    assert len(list(results.rglob("job.json"))) >= 3 and any(p.suffix == ".wandb" for p in results.rglob("*"))
    assert any(p.name == "debug.log" for p in results.rglob("*"))
    planted = (IN_QUERY, IN_ENV_QUERY, IN_USERINFO, UNDER_AUTH, UNDER_KEY, BY_LOOK)
    assert files_holding(results, *planted) == []
    printed = typed.stdout + typed.stderr + from_env.stdout + from_env.stderr + userinfo.stdout + userinfo.stderr
    assert [s for s in planted if s in printed] == []


def test_paths_model_ids_and_numbers_are_not_taken_for_keys():
    """Masking by value must not eat what a record needs to be read back: a mixed-case results
    path (job.json's store_dir), a Hub model id, a number typed for a key ending in "token"."""
    from mip.config.redact import mask_text, secret_values, typed_secrets

    plain = {"model": {"model_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "chars_per_token": "3.25",
                       "extra_body": {"auth": "Zx81Qm0Lr55kTT90aBcD"}},
             "paths": {"results_dir": "/scratch/JSmith1/mip/results", "store_dir": "/work/Project3/shared/store"},
             "task": {"description": "token counting"}}
    assert secret_values(plain) == {"Zx81Qm0Lr55kTT90aBcD"}
    assert typed_secrets(["model.chars_per_token=3.25", "paths.results_dir=/scratch/JSmith1/mip/results"]) == set()
    assert mask_text("cost $13.25 in /scratch/JSmith1/mip/results", secret_values(plain)) == \
        "cost $13.25 in /scratch/JSmith1/mip/results"
