"""One experiment, one record, one identity, on the store a real study leaves behind.

The first-9 planted reader (docs/planted-models.md) runs the core grid on NER at n = 20,
p = 0.55 (planted accuracy 66.7 %, the same as at n = 2,000). Then, as a user would:
two patterns again with ``budget=smoke budget.max_tokens=20000`` (the same experiments
at the same limit under another budget name), one pattern with ``model.read_first=5`` (a
setting that shapes answers), and the grid at 100k on a pool of another size
(``task.ner.pool_size=4000``: other instances). The analysis must count each experiment
once, keep the changed setting in its own slice, and match 20k with 100k on nothing.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from mip.analysis import pairs
from mip.analysis.report import write_report
from mip.analysis.results import load_local
from mip.experiment.scoring import Verdict, parse_answer
from mip.job import run_job

from .conftest import RAW, compose, needs_raw, vary
from .planted import PATTERNS, expected
from .test_tracking import wandb_env  # noqa: F401 - fixture

SEEDS = (0, 1, 2)
N, P = 20, 0.55
PROMPT = "task.arith.prompt.task='Decide which parity most of the numbers have.'"


def _base(tmp, *extra: str):
    return compose("model=simulated_first_k", "model.read_first=9", "task=ner", f"n={N}", f"p={P}", "budget=20k",
                   "progress=false", f"data_dir={RAW}", f"paths.results_dir={tmp}", f"paths.cache_dir={tmp / 'cache'}",
                   *extra)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    core = _base(tmp)
    for pattern in PATTERNS:
        for seed in SEEDS:
            run_job(vary(core, pattern=pattern, seed=seed), tmp / "jobs" / f"core-{pattern}-{seed}")
    smoke = _base(tmp, "budget=smoke", "budget.max_tokens=20000")
    for pattern in ("majority_first", "majority_last"):
        run_job(vary(smoke, pattern=pattern, seed=0), tmp / "jobs" / f"smoke-{pattern}")
    run_job(vary(_base(tmp, "model.read_first=5"), pattern="majority_first", seed=0), tmp / "jobs" / "read5")
    wide = _base(tmp, "budget=100k", "task.ner.pool_size=4000")
    for pattern in PATTERNS:
        run_job(vary(wide, pattern=pattern, seed=0), tmp / "jobs" / f"wide-{pattern}")
    return tmp, load_local([tmp / "store"])


@needs_raw
def test_two_records_of_one_experiment_count_once(study):
    _, frame = study
    core = frame[(frame["model"] == "simulated_first_k") & (frame["budget"] == "20k")]
    assert len(core) == 54  # 6 structured × 2 labels × 3 seeds + random × 3 order seeds × 2 × 3
    assert not core.duplicated(["task", "majority_label", "seed", "pattern", "order_seed"]).any()
    assert any("4 duplicate record" in note for note in frame.attrs["notes"])


@needs_raw
def test_a_changed_setting_is_its_own_slice_named_by_what_differs(study):
    _, frame = study
    assert set(frame["model"]) == {"simulated_first_k", "simulated_first_k [read_first=5]"}
    assert (frame["model"] == "simulated_first_k [read_first=5]").sum() == 2
    default, changed = (frame[frame["model"] == m]["settings"].unique() for m in
                        ("simulated_first_k", "simulated_first_k [read_first=5]"))
    assert len(default) == 1 and len(changed) == 1 and default[0] != changed[0]


@needs_raw
def test_twenty_k_and_100k_on_other_instances_match_nothing_and_say_why(study):
    _, frame = study
    plain = frame[frame["model"] == "simulated_first_k"]
    both = pairs.matched(plain, "budget", order=["20k", "100k"])
    assert both.empty
    assert "0 matched" in both.note() and "different instance sets" in both.note()


@needs_raw
def test_table2_reads_the_planted_accuracy_exactly(study, tmp_path, figures_unencoded):
    _, frame = study
    closed = expected(N, P, first=9)
    path = write_report(frame, tmp_path / "report", core=(N, P))
    numbers = pd.read_csv(tmp_path / "report" / "tables" / "table2_numbers_n20_p0.55.csv")
    row = numbers[(numbers["model"] == "simulated_first_k") & (numbers["budget"] == "20k")].iloc[0]
    assert row["experiments"] == 54
    assert round(100 * row["acc"], 1) == round(100 * closed["acc"], 1) == 66.7
    text = path.read_text()
    assert "simulated_first_k [read_first=5]" in text
    assert "different instance sets" in text


@pytest.mark.parametrize("answer, labels", [
    ("even number", ["even number", "odd number"]), ("Even Number", ["even number", "odd number"]),
    ("even-valued", ["even-valued", "odd-valued"]), ("EVEN_VALUED", ["even-valued", "odd-valued"]),
    ("odd number", ["Even Number", "Odd Number"]),
])
def test_labels_with_spaces_hyphens_and_case_are_compared_as_written(answer, labels):
    got = parse_answer(f'{{"answer": "{answer}"}}', labels)
    assert got is not None and got.casefold().replace("-", " ") == answer.casefold().replace("-", " ").replace("_", " ")


def test_a_task_labelled_even_number_odd_number_scores_every_exact_answer(tmp_path):
    base = compose("model=simulated_unbiased", "task=arith", "task.arith.labels=['even number','odd number']", "n=20",
                   "p=0.6", "budget=20k", "progress=false", f"paths.results_dir={tmp_path}",
                   f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs")
    frame = load_local([tmp_path / "store"])
    assert set(frame["majority_label"]) == {"even number", "odd number"}
    assert set(frame["verdict"]) == {Verdict.CORRECT}


def test_wandb_tables_carry_the_same_identity_as_the_store(tmp_path, wandb_env):  # noqa: F811
    """W&B's experiments table holds each record's settings and instance set: a report from the
    offline runs sets aside the same duplicate and names the same changed-setting slice."""
    from mip.analysis.results import load_wandb_offline

    runs = [("default", ()), ("smoke", ("budget=smoke", "budget.max_tokens=20000")), ("read5", ("model.read_first=5",)),
            ("prompt", (PROMPT,))]
    for name, extra in runs:
        base = compose("model=simulated_first_k", "model.read_first=9", "task=arith", "n=20", "p=0.6", "budget=20k",
                       *extra, "logger=wandb", "progress=false", f"paths.results_dir={tmp_path}",
                       f"paths.cache_dir={tmp_path / 'cache'}")
        run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs" / name)
    local, remote = load_local([tmp_path / "store"]), load_wandb_offline([tmp_path / "jobs"])
    assert len(local) == len(remote) == 6  # two labels, at three settings; the smoke rerun set aside
    assert dict(zip(local["key"], local["model"])) == dict(zip(remote["key"], remote["model"]))
    assert remote["model"].nunique() == 3
    assert dict(zip(local["key"], local["instances"])) == dict(zip(remote["key"], remote["instances"]))
    assert any("2 duplicate record" in note for note in remote.attrs["notes"])


@needs_raw
def test_budgets_read_by_value_everywhere_and_tex_numbers_as_in_markdown(study, tmp_path, figures_unencoded):
    """20k before 100k in every table, figure axis and section; a p-value of 1.86e-09 is not 0.000000."""
    from mip.analysis.report import figures, metric_tables

    _, frame = study
    path = write_report(frame, tmp_path / "report", core=(N, P))
    tables = tmp_path / "report" / "tables"
    for name in ("patterns_by_model_n20_p0.55", "table3_coverage_n20_p0.55", "table2_numbers_n20_p0.55"):
        shown = pd.read_csv(tables / f"{name}.csv")
        labels = (shown["model"] + " · " + shown["budget"].astype(str)) if "budget" in shown else shown["model"]
        order = list(dict.fromkeys(lab for lab in labels if lab.startswith("simulated_first_k ·")))
        assert order == ["simulated_first_k · 20k", "simulated_first_k · 100k"], name
    text = path.read_text()
    assert text.index("Fig. 5 at n=20 p=0.55 (standard prompt, single call, core orderings), budget 20k") < \
        text.index("Fig. 5 at n=20 p=0.55 (standard prompt, single call, core orderings), budget 100k")
    patterns = pd.read_csv(tables / "patterns_by_model_n20_p0.55.csv")
    fig = figures.pattern_bars(patterns)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks.index("simulated_first_k · 20k") < ticks.index("simulated_first_k · 100k")
    written = metric_tables.write_table(pd.DataFrame({"p_value": [1.86e-09, 0.5]}), tmp_path / "t", "p")
    assert "1.86e-09" in written[2].read_text() and "0.000000" not in written[2].read_text()
    assert figures._shown(4.5, "{:.0f}", 100.0) == "4.5"


def test_each_variant_is_compared_with_the_standard_prompt_on_what_those_two_hold(tmp_path, figures_unencoded):
    """Hint on two seeds of one task and the strategy prompt on another task share no experiment:
    compared all at once nothing is left (no Table 5, no Fig. 4); each against the standard prompt,
    each keeps its own matched pairs."""
    from mip.analysis import slices

    from .test_stats import cell, frame

    rows = [r for seed in (0, 1, 2) for pattern in ("majority_first", "majority_last")
            for r in cell(seed, pattern, ["correct", "incorrect", "correct"])]
    rows += [{**r, "prompt_variant": "hint"} for r in rows if r["task"] == "t0" and r["seed"] > 0]
    rows += [{**r, "prompt_variant": "strategy"} for r in rows if r["task"] == "t1" and "prompt_variant" not in r]
    table = slices.add_columns(frame(rows))
    sets = pairs.variant_sets(table)
    assert [(suffix, len(m.frame)) for suffix, _, m in sets] == [("_hint", 8), ("_strategy", 12)]
    write_report(table, tmp_path / "report", core=(20, 0.6))
    tables = tmp_path / "report" / "tables"
    hint = pd.read_csv(next(tables.glob("table5_prompt_variants_*_hint.csv")))
    assert hint.groupby("prompt_variant")["experiments"].sum().to_dict() == {"hint": 4, "standard": 4}
    assert next(tables.glob("table5_prompt_variants_*_strategy.csv"), None) is not None


def test_a_stray_cell_costs_only_itself_not_the_generalisability_grid():
    """Three (n, p) cells on one seed and three tasks, and a 1-experiment run at a fourth cell on
    another seed: the grid keeps its three cells' matched experiments, the stray cell is noted."""
    from mip.analysis import slices

    from .test_stats import cell, frame

    rows = [{**r, "n": n} for n in (20, 50, 100) for r in cell(1, "majority_first", ["correct", "incorrect", "correct"])]
    rows += [{"n": 30, "p": 0.7, "seed": 5, "task": "t9"}]
    parts = slices.sections(slices.add_columns(frame(rows)), core=(20, 0.6))
    assert len(parts.generalisability) == 9
    assert any("(n=30, p=0.7) holds 1 experiment" in note for note in parts.notes)


def test_the_strategy_note_counts_what_the_single_call_holds_in_its_slice():
    from mip.analysis import slices
    from mip.analysis.report.strategy_section import compared

    from .test_stats import cell, frame

    rows = [r for seed in (0, 1, 2) for r in cell(seed, "majority_first", ["correct", "incorrect", "correct"])]
    rows += [{**r, "strategy": "count_report", "model": "M [count_report]", "base_model": "M"} for r in rows if r["seed"] == 0]
    rows += [{**r, "n": 50} for r in rows if "strategy" not in r]  # another slice: not the strategy's baseline
    table = slices.add_columns(frame(rows))
    parts = slices.sections(table, core=(20, 0.6))
    _, note = compared(parts.strategies, slices.single_call_twins(table, parts.strategies))
    assert "single_call: 9 held, 3 matched, 6 dropped" in note and "count_report: 3 held, 3 matched, 0 dropped" in note


def test_the_headline_per_pattern_accuracies_come_from_the_same_matched_set_as_its_delta():
    """majority_first on seeds 0 and 1, majority_last on seed 0: Δ compares seed 0, and so do the
    accuracies printed beside it (100 and 0, not majority_first's 50 over both seeds)."""
    from mip.analysis import slices
    from mip.analysis.headline import headline

    from .test_stats import cell, frame

    rows = cell(0, "majority_first", ["correct", "correct"]) + cell(1, "majority_first", ["incorrect", "incorrect"])
    rows += cell(0, "majority_last", ["incorrect", "incorrect"])
    row = headline(slices.add_columns(frame(rows))).iloc[0]
    assert row["majority_first"] == 100.0 and row["majority_last"] == 0.0 and row["Δ (pp)"].startswith("100")


def test_two_labels_an_answer_cannot_tell_apart_are_refused_when_the_job_is_checked(tmp_path):
    base = compose("model=simulated_unbiased", "task=arith", "task.arith.labels=['even number','Even_Number']", "n=20",
                   "p=0.6", "progress=false", f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    with pytest.raises(ValueError, match="two distinct labels"):
        run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs")


def test_a_record_written_before_a_field_existed_reads_as_one_at_its_old_value():
    """A field added to a schema later (``read_last``, ``temperature`` at 0, ``max_tokens_param``)
    does not make an older record's settings another slice; a value set otherwise does."""
    from mip.experiment.identity import differences, settings_of

    old = {"model": {"name": "m", "read_first": 9}}
    new = {"model": {"name": "m", "read_first": 9, "read_last": None, "temperature": 0.0,
                     "max_tokens_param": "max_tokens"}}
    hot = {"model": {**new["model"], "temperature": 0.7}}
    assert settings_of(old) == settings_of(new) != settings_of(hot)
    assert differences(settings_of(new), settings_of(hot)) == "temperature=0.7"


def test_a_changed_strategy_setting_is_its_own_slice_named_by_what_differs(tmp_path):
    """``strategy=decomposed strategy.batch_size=5`` asks other calls than the default's 50: its
    records are not the default's duplicates but a slice of their own, named by the field. (The
    planted models answer one whole prompt only; the local server labels batches.)"""
    from .fake_server import FakeServer
    from .test_strategies import config

    with FakeServer() as server:
        for name, extra in [("default", ()), ("batch5", ("strategy.batch_size=5",))]:
            run_job(config(tmp_path, server, "strategy=decomposed", *extra, "pattern=majority_first"),
                    tmp_path / "jobs" / name)
    frame = load_local([tmp_path / "store"])
    assert len(frame) == 4  # two labels at two batch sizes; none set aside
    assert not any("duplicate" in note for note in frame.attrs["notes"])
    assert frame["model"].value_counts().to_dict() == {
        "smollm2_135m_server [decomposed]": 2, "smollm2_135m_server [strategy.batch_size=5] [decomposed]": 2}


def test_strategy_settings_of_older_records_read_as_their_old_defaults():
    """A single-call record, one stored before strategies had schemas of their own and one at
    decomposed's defaults hold no strategy setting; a changed one is named by its field."""
    from mip.experiment.identity import differences, settings_of

    model = {"name": "m", "read_first": 9}
    plain = [{"model": model}, {"model": model, "strategy": {"name": "single_call"}},
             {"model": model, "strategy": {"name": "decomposed", "batch_size": 50, "max_reasks": 2}}]
    changed = {"model": model, "strategy": {"name": "decomposed", "batch_size": 50, "max_reasks": 0}}
    assert {settings_of(c) for c in plain} == {'{"read_first": 9}'}
    assert differences(settings_of(plain[0]), settings_of(changed)) == "strategy.max_reasks=0"


def test_a_duplicate_valid_with_another_verdict_is_named_by_its_key(tmp_path):
    """Two valid records of one experiment that disagree: one counts, and the note names the key
    set aside, so it can be looked at (``python -m mip.show KEY``)."""
    from mip.analysis.results import frame_of
    from mip.store import Store

    for name, extra in [("20k", ()), ("smoke", ("budget=smoke", "budget.max_tokens=20000"))]:
        base = compose("model=simulated_first_k", "model.read_first=9", "task=arith", "n=20", "p=0.6", "budget=20k",
                       *extra, "progress=false", f"paths.results_dir={tmp_path}",
                       f"paths.cache_dir={tmp_path / 'cache'}")
        run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs" / name)
    records = sorted(Store(tmp_path / "store"), key=lambda r: r.created_at)
    assert len(records) == 4 and len(frame_of(records, "store")) == 2
    flipped = {Verdict.CORRECT: Verdict.INCORRECT, Verdict.INCORRECT: Verdict.CORRECT}
    last = records[-1]
    records[-1] = last.model_copy(update={"verdict": flipped[last.verdict]})
    notes = frame_of(records, "store").attrs["notes"]
    assert any(f"1 duplicate record(s) set aside were valid with another verdict than the record counted: {last.key};"
               in note for note in notes), notes
    assert not any("another verdict" in note for note in frame_of(records[:3] + [last], "store").attrs["notes"])



@pytest.fixture(scope="module")
def task_reruns(tmp_path_factory):
    """The default arith task on two patterns at 20k and one at 100k; one pattern again at 20k and
    at 100k with another task sentence, and at 20k with its labels written otherwise."""
    tmp = tmp_path_factory.mktemp("task_reruns")

    def run(name: str, pattern: str, *extra: str) -> None:
        base = compose("model=simulated_first_k", "model.read_first=9", "task=arith", "n=20", "p=0.6", "budget=20k",
                       *extra, "progress=false", f"paths.results_dir={tmp}", f"paths.cache_dir={tmp / 'cache'}")
        run_job(vary(base, pattern=pattern, seed=0), tmp / "jobs" / name)

    for pattern in ("majority_first", "majority_last"):
        run(f"default-{pattern}", pattern)
    run("default-100k", "majority_first", "budget=100k")
    run("prompt", "majority_first", PROMPT)
    run("prompt-100k", "majority_first", "budget=100k", PROMPT)
    run("labels", "majority_first", "task.arith.labels=['Even number','Odd number']")
    return tmp, load_local([tmp / "store"])


def test_a_changed_task_setting_is_its_own_slice_named_by_what_differs(task_reruns):
    """Another task sentence or other label spellings key other experiments (the store key hashes
    the task's prompt fields): their records are neither duplicates of the default's nor pooled with them."""
    _, frame = task_reruns
    assert len(frame) == 12 and not any("duplicate" in note for note in frame.attrs["notes"])
    prompt = "simulated_first_k [task.arith.prompt.task=Decide which parity most of the numbers have.]"
    labels = "simulated_first_k [task.arith.labels=[\"Even number\", \"Odd number\"]]"
    assert frame["model"].value_counts().to_dict() == {"simulated_first_k": 6, prompt: 4, labels: 2}


def test_a_changed_task_setting_matches_nothing_of_the_default(task_reruns):
    _, frame = task_reruns
    default_20k = frame[(frame["model"] == "simulated_first_k") & (frame["budget"] == "20k")]
    prompt_100k = frame[(frame["model"] != "simulated_first_k") & (frame["budget"] == "100k")]
    both = pairs.matched(pd.concat([default_20k, prompt_100k]), "budget", order=["20k", "100k"])
    assert both.empty and "different answer-shaping settings" in both.note()
    each = pairs.matched(frame, "budget", order=["20k", "100k"])  # the default with the default, the rerun with itself
    assert len(each.frame) == 8 and each.frame.groupby("settings").size().tolist() == [4, 4]


def test_records_carry_their_task_changes_and_older_records_read_as_the_default(task_reruns):
    """A record holds what its task config changed from the shipped task file (empty for the
    default); a record stored before records held it reads as the default task."""
    from mip.analysis.results import frame_of
    from mip.store import Store

    tmp, _ = task_reruns
    records = list(Store(tmp / "store"))
    changes = {json.dumps(r.config["task"], sort_keys=True) for r in records}
    assert changes == {'{}', '{"arith.labels": ["Even number", "Odd number"]}',
                       '{"arith.prompt.task": "Decide which parity most of the numbers have."}'}
    default = [r for r in records if not r.config["task"]]
    older = [r.model_copy(update={"config": {k: v for k, v in r.config.items() if k != "task"}}) for r in default]
    assert frame_of(older, "store")["settings"].tolist() == frame_of(default, "store")["settings"].tolist()


def test_verdicts_of_the_old_answer_rule_are_named_where_labels_hold_a_space_or_a_hyphen(tmp_path):
    """Verdicts are stored, not scored again at analysis. Rule 2 compared the folded answer with
    each label as written, so a label with a space or a hyphen never scored: such records are named
    (their verdicts may differ from today's rule); records of labels that read alike under both
    rules (every shipped task's) are pooled with today's without a note."""
    from mip.experiment import scoring
    from mip.store import Store

    from .test_records import make_record

    assert scoring.RULE_VERSION == 3
    assert scoring.parse_answer('{"answer": "even number"}', ["even number", "odd number"]) == "even number"
    spaced = make_record().experiment.model_copy(update={"majority_label": "even number", "task": "spaced"})
    Store(tmp_path).put(make_record("plain-2", scoring_rule=2))
    Store(tmp_path).put(make_record("plain-3", scoring_rule=3, experiment=make_record().experiment.model_copy(
        update={"seed": 1})))
    frame = load_local([tmp_path])
    assert len(frame) == 2 and not any("rule" in note for note in frame.attrs["notes"])
    Store(tmp_path).put(make_record("spaced-2", scoring_rule=2, experiment=spaced, pool_version="pv2",
                                    verdict="invalid", invalid_kind="parse", answer=None,
                                    instance_labels=["even number", "odd number"]))
    notes = load_local([tmp_path]).attrs["notes"]
    assert any("1 record(s) of a task whose labels hold a space or a hyphen were scored under answer rule 2" in note
               and "spaced-2" in note for note in notes), notes


def test_a_task_of_a_users_config_folder_is_compared_with_its_own_file(results, tmp_path):
    """A task from another config folder (``hydra.searchpath``) differs from its own file there:
    as shipped its records hold no change, with another task sentence they hold that sentence."""
    from mip.store import Store

    from .conftest import REPO, run_entry

    (tmp_path / "conf" / "task").mkdir(parents=True)
    text = (REPO / "conf" / "task" / "arith.yaml").read_text().replace("arith:", "mytask:").replace("name: arith",
                                                                                                   "name: mytask")
    (tmp_path / "conf" / "task" / "mytask.yaml").write_text(text)
    common = (f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "model=simulated_first_k", "task=mytask",
              "setting=smoke", "progress=false")
    for extra in (["pattern=majority_first"], ["pattern=majority_last"],
                  ["pattern=majority_first", "task.mytask.prompt.task='Decide the parity.'"]):
        ran = run_entry("run.py", *common, *extra)
        assert ran.returncode == 0, ran.stderr[-2000:]
    changes = sorted(str(r.config["task"]) for r in Store(results / "store"))
    assert changes == ["{'mytask.prompt.task': 'Decide the parity.'}"] * 2 + ["{}"] * 4
    # each job's config.yaml names the folders its tasks were read against (Hydra's config sources)
    sources = [yaml.safe_load(p.read_text())["task_source"] for p in results.glob("runs/*/*/config.yaml")]
    assert len(sources) == 3 and all(s == [str(REPO / "conf"), str(tmp_path / "conf")] for s in sources), sources
