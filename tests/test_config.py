"""Every config composes; wrong names and keys fail at composition with the choices."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigKeyError, ValidationError

from mip.config import Config

from .conftest import REPO, compose

GROUPS = sorted(d.name for d in (REPO / "conf").iterdir() if d.is_dir() and d.name not in ("experiment", "local"))


@pytest.mark.parametrize(
    "group,option",
    [(g, f.stem) for g in GROUPS for f in sorted((REPO / "conf" / g).glob("*.yaml"))],
)
def test_every_group_option_composes(group, option):
    cfg = compose(f"{group}={option}")
    assert isinstance(cfg, Config)


@pytest.mark.parametrize("experiment", sorted(f.stem for f in (REPO / "conf" / "experiment").glob("*.yaml")))
def test_every_experiment_preset_composes(experiment):
    assert isinstance(compose(f"+experiment={experiment}"), Config)


def test_plain_defaults_are_a_small_job_that_fits_the_embedded_model():
    cfg = compose()
    assert list(cfg.task) == ["arith"] and cfg.model.name == "smollm2_135m" and cfg.n == 10
    assert cfg.budget.max_tokens <= cfg.model.context_window


@pytest.mark.parametrize("preset", ["core", "generalisability", "prompt_variants", "budgets", "expanded_orderings"])
def test_paper_presets_keep_the_papers_settings(preset):
    cfg = compose(f"+experiment={preset}")
    assert sorted(cfg.task) == ["math", "ner", "occurrence", "sentiment", "wsd"]
    assert (cfg.n, cfg.p, cfg.seed, cfg.order_seeds) == (2000, 0.55, 0, [0, 1, 2])
    assert (cfg.budget.max_tokens, cfg.prompt_variant.name) == (20000, "standard")
    assert cfg.model.name == "smollm2_135m" and cfg.max_attempts == 3
    assert cfg.task["sentiment"].pool_size == 10000 and cfg.task["math"].pool_size == 5000


def test_a_command_line_task_wins_over_a_presets():
    assert list(compose("+experiment=core", "task=ner").task) == ["ner"]


def test_demo_preset():
    cfg = compose("+experiment=demo")
    assert list(cfg.task) == ["arith"] and cfg.model.backend == "hf" and cfg.n == 10


def test_one_task_and_top_level_overrides():
    cfg = compose("task=sentiment", "n=100", "p=0.7", "seed=2", "setting=smoke")
    assert list(cfg.task) == ["sentiment"] and (cfg.n, cfg.p, cfg.seed) == (100, 0.7, 2)


@pytest.mark.parametrize("override", ["task=nonsense", "pattern=majority_sideways", "model=gpt9"])
def test_unknown_names_list_the_choices(override):
    with pytest.raises(ConfigCompositionException, match="Available options"):
        compose(override)


@pytest.mark.parametrize("override", ["model.temprature=0.1", "n=many", "p=high"])
def test_wrong_keys_and_types_fail_at_composition(override):
    with pytest.raises((ConfigCompositionException, ConfigKeyError, ValidationError)):
        compose(override)


@pytest.mark.parametrize("model,field", [
    ("gemma4_31b", "model.gguf_file=x"), ("smollm2_135m", "model.base_url=http://x"), ("mock", "model.engine_kwargs={}"),
    ("qwen36_35b", "model.mock.answer=x"), ("simulated_unbiased", "model.dtype=bfloat16"), ("gemma4_31b", "model.gguf_fil=x"),
])
def test_a_field_of_another_backend_fails_at_composition(model, field):
    """Each backend has its own schema: a field it does not read is a wrong key."""
    with pytest.raises(ConfigCompositionException, match="Could not override"):
        compose(f"model={model}", field)


@pytest.mark.parametrize("model", sorted(f.stem for f in (REPO / "conf" / "model").glob("*.yaml")))
def test_every_model_config_extends_its_backends_schema(model):
    from mip.models import check_schema, schemas

    cfg = compose(f"model={model}").model
    assert type(cfg) is schemas()[cfg.backend]
    check_schema(cfg)


def test_a_backend_overridden_away_from_the_schema_is_refused_before_any_work():
    from mip.models import check_schema

    with pytest.raises(ValueError, match="reads a HFModelConfig, this config is a MockModelConfig"):
        check_schema(compose("model=mock", "model.backend=hf").model)


@pytest.mark.parametrize("launcher", ["local", "submitit_local", "slurm_gpu", "slurm_cpu"])
def test_every_launcher_composes(launcher, monkeypatch):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from mip.entry.config_store import register

    monkeypatch.setenv("MIP_SLURM_PARTITION", "gpu-part")
    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = hydra_compose("config", overrides=[f"hydra/launcher={launcher}"], return_hydra_config=True)
    target = cfg.hydra.launcher._target_
    if launcher.startswith("slurm"):
        assert target.endswith("SlurmLauncher") and cfg.hydra.launcher.partition == "gpu-part"
        assert cfg.hydra.launcher.max_num_timeout > 0  # a timed-out job is requeued and resumes
        assert (cfg.hydra.launcher.gpus_per_node == 1) == (launcher == "slurm_gpu")
    else:
        assert target.endswith("LocalLauncher" if launcher == "submitit_local" else "BasicLauncher")


@pytest.mark.parametrize("preset,params", [
    ("core", {"pattern": "glob(*)", "seed": "0,1,2"}),
    ("generalisability", {"n": "100,200,500,1000,2000", "p": "0.9,0.7,0.6,0.55", "seed": "1"}),
    ("prompt_variants", {"prompt_variant": "standard,hint,strategy,self_prompt"}),
    ("budgets", {"budget": "20k,100k"}),
])
def test_presets_sweep_the_papers_grids(preset, params):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from mip.entry.config_store import register

    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = hydra_compose("config", overrides=[f"+experiment={preset}"], return_hydra_config=True)
    for key, value in params.items():
        assert cfg.hydra.sweeper.params[key] == value


@pytest.mark.parametrize("key,masked", [
    ("api_key", True), ("API_KEY", True), ("x-api-key", True), ("apiKey", True), ("apikey", True),
    ("client_secret", True), ("password", True), ("Authorization", True), ("token", True),
    ("hf_token", True), ("access_token", True), ("session-token", True), ("access_key", True),
    ("api_key_env", False), ("max_tokens_param", False), ("max_tokens", False), ("completion_tokens", False),
    ("reasoning_tokens", False), ("answer_tokens", False), ("tokenizer", False), ("server_tokenize", False),
    ("token_budget", False), ("keyword", False), ("model_id", False),
])
def test_redact_masks_secret_looking_keys_only(key, masked):
    from mip.config import redact

    assert redact({key: "value"}) == {key: "***" if masked else "value"}


def test_a_redacted_model_config_keeps_its_token_settings():
    from mip.config import to_plain

    plain = to_plain(compose("model=gpt54_nano").model)
    assert plain["max_tokens_param"] in ("max_tokens", "max_completion_tokens") and plain["api_key_env"]


API_MODELS = sorted(f.stem for f in (REPO / "conf" / "model").glob("*.yaml")
                    if "openrouter.ai" in f.read_text() or "googleapis.com" in f.read_text())


# Where a price may come from: the router the configs go through, and the model makers' own pages.
# A subdomain counts (api-docs.deepseek.com is deepseek.com); a look-alike host does not
# (openrouter.onee.io is not openrouter.ai). Any other source must be called an "unofficial copy".
OFFICIAL_PRICE_DOMAINS = ("openrouter.ai", "ai.google.dev", "cloud.google.com", "deepseek.com", "openai.com",
                          "x.ai", "alibabacloud.com", "minimax.io")


def _price_note(text):
    """The comment lines from "# Prices looked up" down to the first price key."""
    block = text.split("# Prices looked up", 1)[1].split("price_input_per_mtok:", 1)[0]
    return "# Prices looked up" + block


def _is_official(host):
    return any(host == d or host.endswith("." + d) for d in OFFICIAL_PRICE_DOMAINS)


@pytest.mark.parametrize("model", API_MODELS)
def test_every_api_model_has_a_dated_price_or_says_how_to_set_one(model):
    """A dry run's cost needs both prices; each comes with the page and the day it was read.

    The page is the router's or the maker's own; a copy on any other site is named and called an
    unofficial copy, so nobody mistakes it for the listing it copies.
    """
    import re
    from urllib.parse import urlparse

    text = (REPO / "conf" / "model" / f"{model}.yaml").read_text()
    cfg = compose(f"model={model}").model
    assert (cfg.price_input_per_mtok is None) == (cfg.price_output_per_mtok is None)
    if cfg.price_input_per_mtok is None:
        assert "model.price_input_per_mtok=" in text
        return
    note = _price_note(text)
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", note), "a price needs the day it was read"
    hosts = [urlparse(u.rstrip(".,;:")).hostname for u in re.findall(r"https://[^\s)]+", note)]
    assert hosts, "a price needs the page it came from"
    unofficial = [h for h in hosts if not _is_official(h)]
    assert not unofficial or "unofficial copy" in note, f"{unofficial} not on the allow-list and not called an unofficial copy"


@pytest.mark.parametrize("host,official", [
    ("openrouter.ai", True), ("api-docs.deepseek.com", True), ("ai.google.dev", True),
    ("openrouter.onee.io", False), ("openrouter-de-02.msndr.net", False), ("openrouter.haiouai.com", False),
    ("cloudprice.net", False), ("notopenrouter.ai", False),
])
def test_price_source_allow_list_matches_domains_not_look_alikes(host, official):
    assert _is_official(host) is official


def test_the_local_server_config_makes_one_attempt():
    assert compose("model=smollm2_135m_server").model.deterministic
