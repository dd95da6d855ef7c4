"""The README's "Extending" section, done exactly as it says: a new pattern is one registry
entry, a new backend one module (with its config schema), one registry entry and one YAML
file, a new task one YAML file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pandas as pd
import pytest
from hydra.errors import ConfigCompositionException

from mip.config import ModelConfig, register
from mip.instances import REGISTRY, Pattern, arrange, regions
from mip.job import run_job
from mip.models import BACKENDS, Backend, Completion, Request
from mip.store import Store

from .conftest import REPO, compose


def small(tmp_path, *overrides, model="mock"):
    return compose(f"model={model}", "task=arith", "setting=smoke", "budget=smoke", "progress=false",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *overrides)


def test_a_new_pattern_is_one_registry_entry(tmp_path, monkeypatch):
    minority_edges = Pattern("minority_edges", lambda a, b: [("minority", b - b // 2), ("majority", a), ("minority", b // 2)])
    monkeypatch.setitem(REGISTRY, "minority_edges", minority_edges)
    assert arrange(["A1", "A2", "A3"], ["B1", "B2"], "minority_edges") == ["B1", "A1", "A2", "A3", "B2"]
    assert regions("minority_edges", 6, 4) == [(0, 2, "minority"), (2, 8, "majority"), (8, 10, "minority")]
    cfg = small(tmp_path, "pattern=majority_first", "pattern.name=minority_edges")
    summary = run_job(cfg, tmp_path / "job")
    records = list(Store(cfg.paths.store_dir))
    assert summary.stored_now == 2 and {r.experiment.pattern for r in records} == {"minority_edges"}
    for record in records:  # the instances came in the registered layout
        minority = [label != record.experiment.majority_label for label in record.instance_labels]
        assert minority == [True] * 2 + [False] * 6 + [True] * 2


@dataclass
class EchoConfig(ModelConfig):
    """The new backend's schema: the common model fields and its own."""

    answer: str = "odd_number"


class Echo(Backend):
    """A backend in one module: answers the label its config names."""

    schema = EchoConfig

    def __init__(self, cfg: EchoConfig, context=None):
        self.cfg = cfg

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        for r in requests:
            yield Completion(r.id, output=json.dumps({"answer": self.cfg.answer}), finish_reason="stop")


ECHO_YAML = """defaults:
  - /model_schema/echo@_here_
name: echo
model_id: echo-1
context_window: 100000
"""


def test_a_new_backend_is_one_module_one_registry_entry_and_one_yaml_file(tmp_path, monkeypatch):
    monkeypatch.setitem(BACKENDS, "echo", f"{__name__}:Echo")
    register()  # what an entry point does at start, after the registry holds the new backend
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "echo.yaml").write_text(ECHO_YAML)
    searchpath = f"hydra.searchpath=[file://{tmp_path / 'conf'}]"
    cfg = small(tmp_path, searchpath, "pattern=majority_first", model="echo")
    assert isinstance(cfg.model, EchoConfig) and cfg.model.backend == "echo"  # the registry name sets the backend
    summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 2 and summary.verdicts == {"correct": 1, "incorrect": 1}
    assert small(tmp_path, searchpath, "model.answer=even_number", model="echo").model.answer == "even_number"
    with pytest.raises(ConfigCompositionException):  # its schema has no other backend's fields
        small(tmp_path, searchpath, "model.gguf_file=x", model="echo")


def test_a_new_task_is_one_yaml_file(tmp_path):
    table = tmp_path / "reviews.csv"
    pd.DataFrame({"text": [f"review number {i}" for i in range(40)], "stars": [i % 2 for i in range(40)]}).to_csv(table)
    conf = tmp_path / "conf" / "task"
    conf.mkdir(parents=True)
    yaml = (REPO / "conf" / "task" / "example_reviews.yaml").read_text().replace("example_reviews", "my_reviews")
    yaml = yaml.replace("${oc.env:MIP_EXAMPLE_TABLE,reviews.csv}", str(table)).replace("label_column: label", "label_column: stars")
    (conf / "my_reviews.yaml").write_text(yaml.replace("pool_size: 2000", "pool_size: 40"))
    cfg = compose("model=mock", "task=my_reviews", "setting=smoke", "budget=smoke", "pattern=majority_first",
                  "progress=false", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", f"paths.results_dir={tmp_path}",
                  f"paths.cache_dir={tmp_path / 'cache'}")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 2
    assert {r.experiment.task for r in Store(cfg.paths.store_dir)} == {"my_reviews"}
