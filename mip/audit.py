"""Audit a user's own labelled collection for order sensitivity, with the run and analysis
machinery of mip (beyond the paper).

    python -m mip.audit data=reviews.csv text_col=review label_col=stars labels=[neg,pos] \\
        question="Determine the majority sentiment label among all provided reviews." model=gpt_oss_120b

It builds instance sets at the sizes and proportions asked for (default n ∈ {100, 500},
p ∈ {0.6, 0.7}, seeds 0–2), runs all seven patterns through the chosen model and
strategy, and writes a short report: accuracy per pattern with 95 % intervals, Δ with a
paired test, invalid rate, coverage where traces exist, cost, and a plain verdict.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import pandas as pd

from mip import coverage, slices, stats
from mip.config import Config, PatternConfig, PromptSpec, SourceConfig, TaskConfig
from mip.data import DataError
from mip.instances import PATTERNS, split_counts
from mip.results import load_local
from mip.job import run_job

REPO_CONF = Path(__file__).resolve().parent.parent / "conf"


@dataclass
class AuditConfig:
    data: str = "???"
    text_col: str = "text"
    label_col: str = "label"
    labels: list[str] = field(default_factory=list)
    """The two label values as they appear in the label column."""
    question: str = "Determine the majority label among all provided instances."
    instruction: Optional[str] = None
    """Default: 'Classify each instance independently as "<a>" or "<b>".'"""
    n: list[int] = field(default_factory=lambda: [100, 500])
    p: list[float] = field(default_factory=lambda: [0.6, 0.7])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    out_dir: Optional[str] = None
    alpha: float = 0.05


class AuditError(ValueError):
    """The collection cannot be audited as given; the message says why."""


def read_table(cfg: AuditConfig) -> pd.DataFrame:
    path = Path(cfg.data).expanduser()
    if not path.is_file():
        raise AuditError(f"{path} does not exist.")
    if path.stat().st_size == 0:
        raise AuditError(f"{path} is empty: give a table with a text and a label column.")
    reader = {".csv": pd.read_csv, ".tsv": lambda p: pd.read_csv(p, sep="\t"), ".jsonl": lambda p: pd.read_json(p, lines=True),
              ".parquet": pd.read_parquet}.get(path.suffix.lower())
    if reader is None:
        raise AuditError(f"Cannot read {path.name}: use .csv, .tsv, .jsonl or .parquet.")
    try:
        frame = reader(path)
    except (ValueError, pd.errors.EmptyDataError) as e:
        raise AuditError(f"{path} could not be read as a table ({e}).") from e
    for col in (cfg.text_col, cfg.label_col):
        if col not in frame.columns:
            raise AuditError(f"{path.name} has no column {col!r}; its columns are {list(frame.columns)}.")
    if len(cfg.labels) != 2 or cfg.labels[0] == cfg.labels[1]:
        raise AuditError(f"Name exactly two distinct labels, e.g. labels=[negative,positive]; got {cfg.labels}.")
    values = frame[cfg.label_col].dropna().astype(str).str.strip()
    present = values.value_counts()
    missing = [label for label in cfg.labels if label not in present.index]
    if missing:
        raise AuditError(f"The label column {cfg.label_col!r} holds {dict(present.head(10))}, not the label(s) {missing}. "
                         "Name the two labels as they appear in the data.")
    return frame


def task_config(cfg: AuditConfig, name: str, size: int) -> TaskConfig:
    a, b = (str(x) for x in cfg.labels)
    instruction = cfg.instruction or f'Classify each instance independently as "{a}" or "{b}".'
    return TaskConfig(
        name=name, labels=[a, b], pool_size=2 * size,
        source=SourceConfig(loader="table", path=str(Path(cfg.data).expanduser().resolve()), text_column=cfg.text_col,
                            label_column=cfg.label_col),
        prompt=PromptSpec(task=cfg.question, instructions=[instruction]),
    )


def cells(cfg: AuditConfig, counts: dict[str, int]) -> tuple[list[tuple[int, float]], list[str]]:
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
    test = stats.paired_test(frame, gap.best, gap.worst)
    numbers = {"best": gap.best, "worst": gap.worst, "delta_pp": 100 * (gap.delta or 0), "test": test.test,
               "pairs": test.pairs, "p_value": test.p_value}
    pair = f"{gap.best.replace('_', '-')} vs {gap.worst.replace('_', '-')}"
    if test.test == "not testable" or test.p_value != test.p_value:  # NaN: no test was possible
        return (f"inconclusive: {pair} differ by {100 * (gap.delta or 0):.0f} pp, but only {test.pairs} matched "
                f"instance set(s) hold a valid answer under both — a test needs at least {stats.MIN_PAIRS}; "
                "add seeds or sizes"), numbers
    p_text = "p < 0.001" if test.p_value < 0.001 else f"p = {test.p_value:.3f}"
    if test.p_value < alpha:
        return (f"order-sensitive at this size: {pair} differ by {100 * gap.delta:.0f} pp, {p_text} "
                f"({test.test}, {test.pairs} pairs)"), numbers
    return (f"no significant order effect found at this size ({pair}: {100 * (gap.delta or 0):.0f} pp, {p_text}, "
            f"{test.pairs} pairs)"), numbers


def run_audit(cfg: AuditConfig, base: Config) -> Path:
    """Run the audit grid with ``base`` (model, budget, strategy, paths) and write the report."""
    table = read_table(cfg)
    stem = Path(cfg.data).stem
    name = f"audit_{stem}"
    values = table[cfg.label_col].dropna().astype(str).str.strip()
    counts = {label: int((values == label).sum()) for label in cfg.labels}
    grid, notes = cells(cfg, counts)
    task = task_config(cfg, name, max(counts.values()))
    out = Path(cfg.out_dir or Path(base.paths.results_dir) / "audit" / stem)
    keys: list[str] = []
    for n, p in grid:
        for seed in cfg.seeds:
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
    path = write_audit_report(frame, out, cfg, notes, counts)
    return path


def write_audit_report(frame: pd.DataFrame, out: Path, cfg: AuditConfig, notes: list[str], counts: dict) -> Path:
    lines = [f"# Order-sensitivity audit of {Path(cfg.data).name}", "",
             f"Labels {cfg.labels} ({counts}); model {', '.join(sorted(frame['model'].unique()))}; "
             f"{len(frame)} experiments; seeds {cfg.seeds}.", ""]
    for where, cell in slices.of(frame):  # one slice each: never pooled (mip.slices)
        n, p = where["n"], where["p"]
        sentence, _ = verdict(cell, cfg.alpha)
        lines += [f"## n = {n}, p = {p}", "", f"Slice: {slices.label(where, slices.SLICE)}.", "",
                  f"**Verdict: {sentence}.**", ""]
        rows = []
        for pattern in [x for x in PATTERNS if x in set(cell["pattern"])]:
            sub = cell[cell["pattern"] == pattern]
            acc = stats.accuracy(sub).iloc[0]
            low, high = stats.bootstrap_accuracy(sub) if sub["valid"].any() else (float("nan"), float("nan"))
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
              f"sets (exact McNemar, or a sign-flip permutation test when random has several orders) at α = {cfg.alpha}."]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mip.config import register

    args = sys.argv[1:] if argv is None else argv
    audit_keys = {f.name for f in AuditConfig.__dataclass_fields__.values()}
    audit_args = [a for a in args if a.split("=", 1)[0] in audit_keys]
    run_args = [a for a in args if a not in audit_args]
    register()
    try:
        with initialize_config_dir(config_dir=str(REPO_CONF), version_base="1.3"):
            base = OmegaConf.to_object(compose("config", overrides=["task=arith", "setting=smoke", *run_args]))
        audit_cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(AuditConfig),
                                                        OmegaConf.from_dotlist(audit_args)))
        if audit_cfg.data == "???":
            raise AuditError("Name the table: data=<file.csv|.jsonl|.parquet>.")
        path = run_audit(audit_cfg, base)
    except (AuditError, DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path.read_text(encoding="utf-8"))
    print(f"Report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
