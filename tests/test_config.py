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


def test_paper_defaults():
    cfg = compose()
    assert sorted(cfg.task) == ["math", "ner", "occurrence", "sentiment", "wsd"]
    assert (cfg.n, cfg.p, cfg.seed, cfg.order_seeds) == (2000, 0.55, 0, [0, 1, 2])
    assert (cfg.pattern.name, cfg.budget.max_tokens, cfg.prompt_variant.name) == ("random", 20000, "standard")
    assert cfg.model.name == "smollm2_135m" and cfg.max_attempts == 3
    assert cfg.task["sentiment"].pool_size == 10000 and cfg.task["math"].pool_size == 5000


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
