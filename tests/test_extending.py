"""docs/extending.md, done exactly as it says: a new pattern is one registry
entry, a new backend one module (with its config schema), one registry entry and one YAML
file, a new task one YAML file, a new strategy one class, one registry entry and one YAML
file, a new metric one registry entry, a new report section one function and one entry in
``SECTIONS``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hydra.errors import ConfigCompositionException

from mip.config import ModelConfig
from mip.entry.config_store import register
from mip.experiment.instances import REGISTRY, Pattern, arrange, regions
from mip.job import run_job
from mip.models import BACKENDS, Backend, Completion, Request
from mip.store import Store
from mip.strategies import Strategy

from .conftest import REPO, compose


@pytest.fixture(autouse=True)
def restored_registries():
    """Each test registers its new part in process-wide registries (monkeypatch restores the
    dicts it patched); Hydra's ConfigStore, which ``register()`` fills, is restored here."""
    import copy

    from hydra.core.config_store import ConfigStore

    repo = ConfigStore.instance().repo
    groups = {g: copy.copy(repo[g]) for g in ("model_schema", "strategy_schema") if g in repo}
    yield
    repo.update(groups)  # the schemas stored before, and no other (Hydra's own plugins stay)


def register_pattern(monkeypatch, pattern: Pattern) -> None:
    """One entry in ``REGISTRY``, and ``PATTERNS`` (the registry's names, read at import by
    every module that lists patterns) following it in each of them."""
    import sys

    import mip.experiment.instances

    old = mip.experiment.instances.PATTERNS
    monkeypatch.setitem(REGISTRY, pattern.name, pattern)
    for module in [m for name, m in sys.modules.items() if name.startswith("mip") and m is not None]:
        if getattr(module, "PATTERNS", None) is old:
            monkeypatch.setattr(module, "PATTERNS", tuple(REGISTRY))


def dry_then_real(cfg, folder):
    """The new part dry-run, then run: the dry run counts what the run then sends."""
    dry = run_job(dataclasses.replace(cfg, dry_run=True), folder / "dry")
    assert dry.ok and dry.dry_run and dry.calls == 0
    summary = run_job(cfg, folder / "job")
    assert dry.per_task["arith" if "arith" in dry.per_task else next(iter(dry.per_task))]["calls"] == summary.calls
    return summary


def small(tmp_path, *overrides, model="mock"):
    return compose(f"model={model}", "task=arith", "setting=smoke", "budget=smoke", "progress=false",
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *overrides)


def test_a_new_pattern_is_one_registry_entry_and_one_yaml_file(tmp_path, monkeypatch):
    from mip.tools import run_summary as summaries
    from mip.experiment.instances import PATTERNS  # the name a module bound at import

    minority_edges = Pattern("minority_edges", lambda a, b: [("minority", b - b // 2), ("majority", a), ("minority", b // 2)])
    register_pattern(monkeypatch, minority_edges)
    import mip.experiment.instances

    assert "minority_edges" in mip.experiment.instances.PATTERNS and "minority_edges" in summaries.PATTERNS
    assert "minority_edges" not in PATTERNS  # a name bound before: what the helper above keeps current in mip
    assert arrange(["A1", "A2", "A3"], ["B1", "B2"], "minority_edges") == ["B1", "A1", "A2", "A3", "B2"]
    assert regions("minority_edges", 6, 4) == [(0, 2, "minority"), (2, 8, "majority"), (8, 10, "minority")]
    (tmp_path / "conf" / "pattern").mkdir(parents=True)
    (tmp_path / "conf" / "pattern" / "minority_edges.yaml").write_text("name: minority_edges\n")  # the one-line YAML
    cfg = small(tmp_path, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "pattern=minority_edges")
    summary = dry_then_real(cfg, tmp_path)
    records = list(Store(cfg.paths.store_dir))
    assert summary.stored_now == 2 and {r.experiment.pattern for r in records} == {"minority_edges"}
    for record in records:  # the instances came in the registered layout
        minority = [label != record.experiment.majority_label for label in record.instance_labels]
        assert minority == [True] * 2 + [False] * 6 + [True] * 2
    # The attribution profile shades its regions from the same layout.
    from mip.attribution.profile_figures import profile_figure

    (ax,) = profile_figure(np.ones(10), 1, "minority_edges", 10, 0.6, pd.DataFrame({"correct": [True]})).axes
    assert len(ax.patches) == 3 and [t.get_text() for t in ax.get_legend().get_texts()] == ["minority", "majority",
                                                                                          "uniform"]


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
    summary = dry_then_real(cfg, tmp_path)
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
    summary = dry_then_real(cfg, tmp_path)
    assert summary.stored_now == 2
    assert {r.experiment.task for r in Store(cfg.paths.store_dir)} == {"my_reviews"}


def test_a_new_metric_is_one_entry_and_reaches_table_2_and_the_budgets_figure(monkeypatch):
    """Chance-level accuracy: an invalid answer counts as half right."""
    from mip.analysis import stats
    from mip.analysis.report import figures, metric_tables as tables

    from .test_stats import cell, frame

    chance = stats.Metric("_chance", "chance-level accuracy",
                          lambda c: (c["correct"] + (c["experiments"] - c["valid"]) / 2) / c["experiments"])
    monkeypatch.setitem(stats.METRICS, "chance", chance)
    rows = frame(cell(0, "majority_first", ["correct", "invalid", "incorrect", "correct"])
                 + cell(0, "majority_last", ["incorrect", "incorrect", "invalid", "correct"]))
    models = stats.model_table(rows)
    row = models.iloc[0]
    assert row["acc_chance"] == pytest.approx((2.5 / 4 + 1.5 / 4) / 2)  # one seed: the mean of its two patterns
    assert row["delta_chance"] == pytest.approx(2.5 / 4 - 1.5 / 4)  # π⁺ majority_first, π⁻ majority_last
    assert row["acc"] == pytest.approx((2 / 3 + 1 / 3) / 2)  # the paper's metrics are unchanged
    shown = tables.table2(models)
    assert list(shown.columns[1:8]) == ["Acc (%)", "Δ (pp)", "π⁺ / π⁻", "Acc_all (%)", "Δ_all (pp)",
                                        "Acc_chance (%)", "Δ_chance (pp)"]
    assert shown["Acc_chance (%)"][0] == "50.0"
    panels = figures.budgets(stats.model_table(rows, ["model", "budget"])).axes
    assert [ax.get_ylabel() for ax in panels] == ["valid-only accuracy (%)", "all-experiment accuracy (%)",
                                                  "chance-level accuracy (%)", "invalid rate (%)"]


class AskTwice(Strategy):
    """A strategy in one module: each attempt asks the same prompt twice and keeps the
    second answer (what a self-consistency check would build on). It states what an attempt
    sends, and sees only its context: a ``generate``, token counts, the attempt log."""

    def sends(self, plan, prompt_tokens, ctx):
        from mip.strategies import Sent

        twice = Sent(2, 2 * prompt_tokens, 2 * ctx.room(prompt_tokens))
        return twice, twice

    def attempts(self, ctx, live):
        from mip.experiment import scoring
        from mip.experiment.records import Attempt
        from mip.strategies import Landed, stage_of

        for plan, n_tokens in live:
            stages, answer = [], None
            for name in ("first", "second"):
                request = ctx.request(f"{plan.key}#{name}", plan.prompt, n_tokens)
                (completion,) = ctx.generate([request])
                if completion.error:
                    break
                stages.append(stage_of(name, request, completion, prompt_sha=plan.prompt_sha))
                answer = scoring.parse_answer(completion.output, plan.task.labels)
            else:
                verdict, kind = scoring.verdict_of(answer, plan.gold, completion.finish_reason)
                yield Landed(plan, n_tokens, Attempt(index=ctx.next_index(plan.key), stages=stages, answer=answer,
                                                     verdict=verdict, invalid_kind=kind))


def test_a_new_strategy_is_one_class_one_registry_entry_and_one_yaml_file(tmp_path, monkeypatch):
    from mip.strategies import STRATEGIES

    monkeypatch.setitem(STRATEGIES, "ask_twice", f"{__name__}:AskTwice")
    register()  # what an entry point does at start: the new strategy's schema under /strategy_schema/ask_twice
    (tmp_path / "conf" / "strategy").mkdir(parents=True)
    (tmp_path / "conf" / "strategy" / "ask_twice.yaml").write_text("defaults:\n  - /strategy_schema/ask_twice@_here_\n"
                                                                  "name: ask_twice\n")
    cfg = small(tmp_path, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "strategy=ask_twice",
                "pattern=majority_first")
    dry = run_job(dataclasses.replace(cfg, dry_run=True), tmp_path / "dry")
    summary = run_job(cfg, tmp_path / "job")
    assert summary.stored_now == 2 and summary.calls == 4
    # Its dry run counts the calls it states, as the run then makes them.
    assert dry.per_task["arith"]["calls"] == summary.calls and dry.max_output_tokens == summary.max_output_tokens
    records = list(Store(cfg.paths.store_dir))
    assert all([s.name for s in r.attempts[0].stages] == ["first", "second"] for r in records)
    assert {r.experiment.strategy for r in records} == {"ask_twice"}
    single = run_job(small(tmp_path, "pattern=majority_first"), tmp_path / "single")
    assert single.stored_now == 2  # another strategy is another experiment: its own keys


def test_a_new_metric_reaches_the_report_analyze_py_writes(tmp_path, monkeypatch):
    """The metric run end to end: records of a run, then analyze.py, whose Table 2 carries it."""
    from mip.analysis import stats

    from .conftest import run_entry
    from .test_analyze import grid

    chance = stats.Metric("_chance", "chance-level accuracy",
                          lambda c: (c["correct"] + (c["experiments"] - c["valid"]) / 2) / c["experiments"])
    monkeypatch.setitem(stats.METRICS, "chance", chance)
    grid(tmp_path, ["model=mock"], [(10, 0.6)], patterns=["majority_first", "majority_last"], seeds=(0, 1))
    ran = run_entry("analyze.py", f"results=[{tmp_path / 'store'}]", f"out_dir={tmp_path / 'out'}", "core=[10,0.6]")
    assert ran.returncode == 0, ran.stderr[-2000:]
    table = pd.read_csv(tmp_path / "out" / "tables" / "table2_numbers_n10_p0.6.csv")
    assert {"acc_chance", "delta_chance"} <= set(table.columns) and table["acc_chance"].between(0, 1).all()


def test_every_registry_is_as_it_was_after_the_tests_above():
    """Run last in this module: what the tests registered is gone again."""
    import mip.experiment.instances
    from hydra.core.config_store import ConfigStore

    from mip.analysis import stats
    from mip.strategies import STRATEGIES

    repo = ConfigStore.instance().repo
    assert "echo" not in BACKENDS and "echo.yaml" not in repo.get("model_schema", {})
    assert "ask_twice" not in STRATEGIES and "ask_twice.yaml" not in repo.get("strategy_schema", {})
    assert "minority_edges" not in REGISTRY and "minority_edges" not in mip.experiment.instances.PATTERNS
    assert list(stats.METRICS) == ["valid_only", "all"]


def test_a_new_report_section_is_one_function_and_one_sections_entry(tmp_path, monkeypatch, figures_unencoded):
    """The report-section recipe's own code, taken from docs/extending.md: one function and one
    ``Section`` in ``SECTIONS``; report.md prints its table and report.html links each count to
    the list of its experiments."""
    import re

    import mip.analysis.report as report_module
    from mip.analysis.report import Section, write_report
    from mip.analysis.report.cells import grouped

    from .test_analyze import _frame
    from .test_html_links import _listed, _rows, _table

    page = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    recipe = page[page.index("## A report section"):]
    code = re.search(r"```python\n(.*?)```", recipe, re.S).group(1)
    scope = {"grouped": grouped}
    exec(code, scope)  # noqa: S102 - the page's example, run as written
    monkeypatch.setattr(report_module, "SECTIONS", [*report_module.SECTIONS,
                                                    Section("verdicts", "Verdicts", scope["verdicts"], records="core")])
    folder = tmp_path / "report"
    write_report(_frame(_rows()), folder, core=(20, 0.6))
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Verdicts" in markdown and "### verdicts (table)" in markdown
    head, rows = _table(folder, "verdicts")
    assert head == ["model", "verdict", "experiments"] and rows
    for (model, _), (verdict, _), (count, href) in rows:
        listed = _listed(folder, href)
        assert len(listed) == int(count) > 0 and set(listed["verdict"]) == {verdict}, (model, verdict)
