"""Audit a user's own labelled collection for order sensitivity, with the run and analysis
machinery of mip (beyond the paper). The command is the root entry point ``audit.py``:

    python audit.py audit.data=reviews.csv audit.text_col=review audit.label_col=stars audit.labels=[neg,pos] \\
        audit.question="Determine the majority sentiment label among all provided reviews." model=gpt_oss_120b

It builds instance sets at the sizes and proportions asked for (default n ∈ {100, 500},
p ∈ {0.6, 0.7}, seeds 0–2), runs all seven patterns through the chosen model and
strategy (one :func:`mip.job.run_job` per cell, seed and pattern), and writes a short
report: accuracy per pattern with 95 % intervals, Δ with a paired test, invalid rate,
coverage where traces exist, cost, and a plain verdict. Exercised by ``pytest tests/test_audit.py``.

>>> import tempfile
>>> table = Path(tempfile.mkdtemp()) / "reviews.csv"
>>> _ = table.write_text("review,stars\\ngood,pos\\nbad,neg\\nfine,pos\\n")
>>> label_counts(AuditOptions(data=str(table), text_col="review", label_col="stars", labels=["neg", "pos"]))
{'neg': 1, 'pos': 2}
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pandas as pd

from mip.analysis import coverage, inference, slices, stats
from mip.config import AuditConfig, AuditOptions, Config, PatternConfig, PromptSpec, SourceConfig, TaskConfig
from mip.config.task import two_distinct_labels
from mip.data.sources.tables import read_table
from mip.experiment.instances import PATTERNS, split_counts
from mip.job import run_job
from mip.analysis.results import load_local

class AuditError(ValueError):
    """The collection cannot be audited as given; the message says why."""


def label_counts(cfg: AuditOptions) -> dict[str, int]:
    """How many rows of the table hold each of the two labels, after checking that the table
    has the columns and labels named (:func:`mip.data.sources.tables.read_table` checks the file)."""
    if not cfg.data:
        raise AuditError("Name the table to audit: audit.data=<file.csv|.tsv|.jsonl|.json|.parquet>.")
    if not two_distinct_labels(cfg.labels):
        raise AuditError(f"Name exactly two distinct labels, e.g. audit.labels=[negative,positive]; got {cfg.labels}.")
    path = Path(cfg.data).expanduser()
    frame = read_table(path)
    for option, col in (("audit.text_col", cfg.text_col), ("audit.label_col", cfg.label_col)):
        if col not in frame.columns:
            raise AuditError(f"{path.name} has no column {col!r}; its columns are {list(frame.columns)}: "
                             f"set {option}=<one of them>.")
    values = frame[cfg.label_col].dropna().astype(str).str.strip()
    present = values.value_counts()
    missing = [label for label in cfg.labels if label not in present.index]
    if missing:
        raise AuditError(f"The label column {cfg.label_col!r} holds {dict(present.head(10))}, not the label(s) "
                         f"{missing}. Name the two labels as they appear in the data (audit.labels=[a,b]).")
    return {label: int((values == label).sum()) for label in cfg.labels}


def task_config(cfg: AuditOptions, name: str, size: int) -> TaskConfig:
    """The audit's task: the table as a ``table`` source, the two labels and the question."""
    a, b = (str(x) for x in cfg.labels)
    instruction = cfg.instruction or f'Classify each instance independently as "{a}" or "{b}".'
    return TaskConfig(
        name=name, labels=[a, b], pool_size=2 * size,
        source=SourceConfig(loader="table", path=str(Path(str(cfg.data)).expanduser().resolve()),
                            text_column=cfg.text_col, label_column=cfg.label_col),
        prompt=PromptSpec(task=cfg.question, instructions=[instruction]),
    )


def cells(cfg: AuditOptions, counts: dict[str, int]) -> tuple[list[tuple[int, float]], list[str]]:
    """The (n, p) cells that the data can fill, and why the others were left out."""
    ok, notes = [], []
    smaller = min(counts.values())
    for n in cfg.n:
        for p in cfg.p:
            try:
                n_maj, _ = split_counts(n, p)
            except ValueError as e:
                notes.append(f"n={n}, p={p} left out: {e}")
                continue
            if n_maj > smaller:
                notes.append(f"n={n}, p={p} left out: it needs {n_maj} instances of each label as majority, "
                             f"the data hold {counts}.")
                continue
            ok.append((n, p))
    if not ok:
        raise AuditError("No size and proportion fits the data: " + " ".join(notes))
    return ok, notes


def verdict(frame: pd.DataFrame, alpha: float) -> tuple[str, dict]:
    """A plain sentence on order sensitivity for one (n, p) cell, and the numbers behind it."""
    gap = stats.best_worst_gap(frame)
    if gap.best is None:
        return "not enough valid answers to compare patterns", {}
    test = inference.paired_test(frame, gap.best, gap.worst)
    numbers = {"best": gap.best, "worst": gap.worst, "delta_pp": 100 * (gap.delta or 0), "test": test.test,
               "pairs": test.pairs, "p_value": test.p_value}
    pair = f"{gap.best.replace('_', '-')} vs {gap.worst.replace('_', '-')}"
    if test.test == "not testable" or test.p_value != test.p_value:  # NaN: no test was possible
        return (f"inconclusive: {pair} differ by {100 * (gap.delta or 0):.0f} pp, but only {test.pairs} matched "
                f"instance set(s) hold a valid answer under both — a test needs at least {inference.MIN_PAIRS}; "
                "add seeds or sizes"), numbers
    p_text = "p < 0.001" if test.p_value < 0.001 else f"p = {test.p_value:.3f}"
    if test.p_value < alpha:
        return (f"order-sensitive at this size: {pair} differ by {100 * gap.delta:.0f} pp, {p_text} "
                f"({test.test}, {test.pairs} pairs)"), numbers
    return (f"no significant order effect found at this size ({pair}: {100 * (gap.delta or 0):.0f} pp, {p_text}, "
            f"{test.pairs} pairs)"), numbers


def run_settings(cfg: AuditConfig) -> Config:
    """``cfg``'s run settings (model, budget, strategy, paths, …) as a plain :class:`Config`, so
    that each job's config, and the ``config.yaml`` saved beside it, hold no audit section."""
    return Config(**{f.name: getattr(cfg, f.name) for f in fields(Config)})


def run_audit(cfg: AuditConfig) -> Path:
    """Run the audit grid of ``cfg.audit`` with ``cfg``'s run settings and write the report."""
    options = cfg.audit
    counts = label_counts(options)
    stem = Path(str(options.data)).stem
    name = f"audit_{stem}"
    grid, notes = cells(options, counts)
    task = task_config(options, name, max(counts.values()))
    base = run_settings(cfg)
    out = Path(options.out_dir or Path(base.paths.results_dir) / "audit" / stem)
    keys: list[str] = []
    for n, p in grid:
        for seed in options.seeds:
            for pattern in PATTERNS:
                job = replace(base, task={name: task}, n=n, p=p, seed=seed, setting="audit", dry_run=False,
                              pattern=PatternConfig(name=pattern))
                summary = run_job(job, out / "jobs" / f"n{n}-p{p}-s{seed}-{pattern}")
                keys += summary.keys
                if not summary.ok:
                    notes.append(f"n={n}, p={p}, seed {seed}, {pattern}: {summary.unstored} experiment(s) unstored "
                                 "(infrastructure failures); rerun the same command to complete them.")
    frame = load_local([base.paths.store_dir])
    frame = frame[frame["key"].isin(set(keys))]
    return write_audit_report(frame, out, options, notes, counts)


def write_audit_report(frame: pd.DataFrame, out: Path, cfg: AuditOptions, notes: list[str], counts: dict) -> Path:
    """``out/audit.md``: per (n, p) slice its verdict, each pattern's accuracy with its interval,
    coverage where traces exist and what it cost; then the notes and how the numbers were made."""
    lines = [f"# Order-sensitivity audit of {Path(str(cfg.data)).name}", "",
             f"Labels {cfg.labels} ({counts}); model {', '.join(sorted(frame['model'].unique()))}; "
             f"{len(frame)} experiments; seeds {cfg.seeds}.", ""]
    for where, cell in slices.of(frame):  # one slice each: never pooled (mip.analysis.slices)
        n, p = where["n"], where["p"]
        sentence, _ = verdict(cell, cfg.alpha)
        lines += [f"## n = {n}, p = {p}", "", f"Slice: {slices.label(where, slices.SLICE)}.", "",
                  f"**Verdict: {sentence}.**", ""]
        rows = []
        for pattern in [x for x in PATTERNS if x in set(cell["pattern"])]:
            sub = cell[cell["pattern"] == pattern]
            acc = stats.accuracy(sub).iloc[0]
            low, high = inference.bootstrap_accuracy(sub) if sub["valid"].any() else (float("nan"), float("nan"))
            rows.append({"pattern": pattern, "accuracy %": round(100 * acc["acc_mean"], 1) if acc["valid"] else None,
                         "95 % interval": f"{100 * low:.0f}–{100 * high:.0f}" if sub["valid"].any() else "–",
                         "valid": int(acc["valid"]), "experiments": int(acc["experiments"]),
                         "invalid %": round(100 * (1 - sub["valid"].mean()), 1)})
        lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
        traced = coverage.with_coverage(cell)
        if not traced.empty:
            lines += [f"Reasoning traces mention {100 * traced['coverage'].mean():.0f} % of the instances on average "
                      f"({len(traced)} valid experiments with a trace).", ""]
        cost = cell["cost"].sum(min_count=1)
        lines += [f"Tokens: {int(cell['prompt_tokens'].fillna(0).sum()):,} prompt, "
                  f"{int(cell['completion_tokens'].fillna(0).sum()):,} completion; cost: "
                  + (f"${cost:,.4f}" if pd.notna(cost) else "not reported by the backend") + ".", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    lines += ["Accuracy is valid-only (invalid outputs excluded, shown as 'invalid %'); intervals are cluster "
              "bootstraps over instance sets; the verdict compares the best and worst pattern on matched instance "
              "sets (exact McNemar, or a sign-flip permutation test when random has several orders) at "
              f"α = {cfg.alpha}."]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
