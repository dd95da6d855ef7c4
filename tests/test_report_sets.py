"""Which records a report's numbers pool: the paper's model sets for pooled trace figures (§5.1,
footnote 10), every strategies number inside one slice, and a note where Fig. 4 and Fig. 20 of
the same records point in opposite directions."""

from __future__ import annotations

import pandas as pd
import pytest
from omegaconf import OmegaConf

from mip.analysis.report import write_report
from mip.analysis.report.model_sets import TracePool, declared_traces

from .conftest import REPO, run_entry
from .test_analyze import PATTERNS, _frame, grid
from .test_stats import cell

MODEL_DIR = REPO / "conf" / "model"
#: What analyze.py pools by default: the full-reasoning models its model configs declare.
SHIPPED = TracePool.of(OmegaConf.create({"models": None, "model_dir": str(MODEL_DIR)}))
PAPER_FULL = {"deepseek_v4_flash", "gpt_oss_120b", "qwen36_35b", "qwen36_plus"}


def test_each_model_config_says_what_its_traces_are(tmp_path):
    declared = declared_traces(MODEL_DIR)
    assert declared_traces(None) == {}  # the package reads no conf/ itself: analyze.py passes its folder
    assert {m for m, kind in declared.items() if kind == "full"} == PAPER_FULL
    assert declared["grok41_fast"] == "summary"
    assert declared["simulated_first_k"] == declared["simulated_unbiased"] == "planted"
    assert set(declared.values()) <= {"full", "summary", "absent", "planted"}
    # A simulated model that says nothing is planted by its schema (a new planted model cannot be pooled by accident).
    (tmp_path / "mine.yaml").write_text("defaults:\n  - /model_schema/simulated@_here_\nname: mine\nmodel_id: simulated\n")
    (tmp_path / "api.yaml").write_text("defaults:\n  - /model_schema/openai_compat@_here_\nname: api\nmodel_id: x\n")
    assert declared_traces(tmp_path) == {"api": "absent", "mine": "planted"}


def test_a_wrong_trace_kind_fails_at_composition(tmp_path):
    from .conftest import compose

    with pytest.raises(Exception, match="traces"):
        compose("model=qwen36_35b", "model.traces=sometimes")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The issue's simulated pair: simulated_first_k reads the first 9 of 20 instances, simulated_unbiased all."""
    tmp = tmp_path_factory.mktemp("simulated")
    for model in ("simulated_first_k", "simulated_unbiased"):
        grid(tmp, [f"model={model}", "budget=smoke"], [(20, 0.6)], patterns=PATTERNS, seeds=(0, 1, 2))
    return tmp


def _analyze(simulated, out, *extra):
    ran = run_entry("analyze.py", f"results=[{simulated / 'store'}]", f"out_dir={out}", "core=[20,0.6]", *extra)
    assert ran.returncode == 0, ran.stderr[-2000:]
    return (out / "report.md").read_text()


def test_the_simulated_pair_is_never_pooled_by_default_and_each_model_keeps_its_curve(simulated, tmp_path, figures_unencoded):
    """Pooled, Fig. 5 turned a 100 %-then-0 % curve and a flat 100 % curve into a 50 % plateau."""
    text = _analyze(simulated, tmp_path / "out")
    assert "### fig5_mention_rates_n20_p0.6_smoke_unfiltered (figure not drawn)" in text
    assert "simulated_first_k: planted, simulated_unbiased: planted) none declares full reasoning traces" in text
    assert "figures/fig5_mention_rates_per_model_n20_p0.6_smoke_unfiltered.png" in text
    rates = pd.read_csv(tmp_path / "out" / "data" / "mention_rates_n20_p0.6_smoke_unfiltered.csv")
    rates = rates[rates["pattern"] == "all patterns"].pivot(index="position", columns="model", values="rate")
    assert "pooled" not in rates.columns
    assert rates["simulated_first_k"].tolist() == [1.0] * 9 + [0.0] * 11
    assert rates["simulated_unbiased"].tolist() == [1.0] * 20


def test_coverage_models_pools_the_named_models_and_the_title_says_which(simulated, tmp_path, monkeypatch):
    from mip.analysis.report import drawing, figures

    titles = {}

    def keep_title(fig, folder, name):
        titles[name] = fig._suptitle.get_text() if fig._suptitle else fig.axes[0].get_title()
        figures.plt.close(fig)
        return [folder / f"{name}.png", folder / f"{name}.pdf"]

    monkeypatch.setattr(figures, "save", keep_title)
    monkeypatch.setattr(drawing, "WORKERS", 1)  # drawn in this process, where keep_title sees them
    _analyze(simulated, tmp_path / "out", "coverage.models=[simulated_first_k]")
    assert titles["fig5_mention_rates_n20_p0.6_smoke_unfiltered"].endswith("pooled over coverage.models simulated_first_k")
    rates = pd.read_csv(tmp_path / "out" / "data" / "mention_rates_n20_p0.6_smoke_unfiltered.csv")
    pooled = rates[(rates["model"] == "pooled") & (rates["pattern"] == "all patterns")]
    assert pooled["rate"].tolist() == [1.0] * 9 + [0.0] * 11  # simulated_first_k alone, not averaged with the other


def test_full_reasoning_models_are_pooled_and_others_left_out(tmp_path, figures_unencoded):
    every = " ".join(str(i) for i in range(1, 21))
    rows = cell(0, "majority_first", ["correct"] * 2, model="qwen36_35b", reasoning="1 2")
    rows += cell(0, "majority_first", ["correct"] * 2, model="grok41_fast", reasoning=every)
    rows += cell(0, "majority_middle", ["correct"] * 2, model="qwen36_35b", reasoning="1 2")
    rows += cell(0, "majority_middle", ["correct"] * 2, model="grok41_fast", reasoning=every)
    write_report(_frame(rows), tmp_path / "report", core=(20, 0.6), pool=SHIPPED)
    rates = pd.read_csv(tmp_path / "report" / "data" / "mention_rates_n20_p0.6_20k_unknown.csv")
    pooled = rates[(rates["model"] == "pooled") & (rates["pattern"] == "all patterns")].set_index("position")["rate"]
    assert pooled[1] == 1.0 and pooled[3] == 0.0  # qwen36_35b's traces only: Grok's summaries mention every ID
    cov = OmegaConf.create({"models": ["qwen36_35b", "grok41_fast"], "model_dir": None})
    write_report(_frame(rows), tmp_path / "both", core=(20, 0.6), pool=TracePool.of(cov))
    rates = pd.read_csv(tmp_path / "both" / "data" / "mention_rates_n20_p0.6_20k_unknown.csv")
    pooled = rates[(rates["model"] == "pooled") & (rates["pattern"] == "all patterns")].set_index("position")["rate"]
    assert pooled[3] == 0.5


def test_the_strategies_section_keeps_budgets_in_rows_of_their_own(tmp_path, figures_unencoded):
    """cost_and_tokens, count_errors and the position-error figure added two budgets into one row."""
    rows = []
    for budget, cost in (("20k", 1.0), ("100k", 3.0)):
        for seed in (0, 1):
            rows += cell(seed, "majority_first", ["correct"] * 2, strategy="decomposed", calls=3, budget=budget,
                         cost=cost, position_errors=[0.0, 1.0, 0.0, 1.0], count_error_majority=-1 if budget == "20k" else -5)
    path = write_report(_frame(rows), tmp_path / "report", core=(20, 0.6))
    cost = pd.read_csv(tmp_path / "report" / "tables" / "cost_and_tokens.csv")
    assert sorted(zip(cost["budget"], cost["cost per experiment (USD)"])) == [("100k", 3.0), ("20k", 1.0)]
    errors = pd.read_csv(tmp_path / "report" / "tables" / "count_errors.csv")
    assert sorted(zip(errors["budget"], errors["mean error"])) == [("100k", -5.0), ("20k", -1.0)]
    text = path.read_text()
    for budget in ("20k", "100k"):  # one figure per slice
        assert f"### position_error_rates_M_n20_p0.6_{budget}_standard_decomposed_unknown_core (figure)" in text


def test_fig4_and_fig20_stand_on_the_same_matched_experiments(tmp_path, figures_unencoded):
    """Standard 100 % on seed 0 and 0 % on seed 1, hint 75 % on seed 0 only: Fig. 4 read +25 pp (each prompt
    over its own seeds) where Fig. 20 read −25 pp (paired). Both now stand on seed 0, the experiments both
    prompts hold, and the report counts the standard prompt's seed-1 experiments as dropped."""
    rows = cell(0, "majority_first", ["correct"] * 4) + cell(1, "majority_first", ["incorrect"] * 4)
    rows += cell(0, "majority_middle", ["correct"] * 4) + cell(1, "majority_middle", ["incorrect"] * 4)
    rows += cell(0, "majority_first", ["correct"] * 3 + ["incorrect"], prompt_variant="hint")
    rows += cell(0, "majority_middle", ["correct"] * 3 + ["incorrect"], prompt_variant="hint")
    text = write_report(_frame(rows), tmp_path / "report", core=(20, 0.6)).read_text()
    table5 = pd.read_csv(tmp_path / "report" / "tables" / "table5_prompt_variants_n20_p0.6_unknown.csv").set_index("prompt_variant")
    assert table5.loc["standard", "acc"] == 1.0 and table5.loc["hint", "acc"] == 0.75
    deltas = pd.read_csv(tmp_path / "report" / "tables" / "prompt_variant_deltas_n20_p0.6_unknown_20k.csv")
    assert deltas.set_index("pattern").loc["overall", "delta_mean"] == -0.25
    assert "M — standard: 16 held, 8 matched, 8 dropped (t0 2, t1 2, t2 2, t3 2); hint: 8 held, 8 matched, 0 dropped" in text
