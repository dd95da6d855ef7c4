"""The analysis report: every table and figure the records support, and report.md.

>>> write_report(frame, "results/report")          # doctest: +SKIP

Choices where the paper leaves one are written into the report itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mip import coverage, stats
from mip.instances import PATTERNS
from mip.report import figures, tables


@dataclass
class Report:
    folder: Path
    items: list[tuple[str, list[Path], str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self, frame: pd.DataFrame, name: str, how: str) -> None:
        self.items.append(("table", tables.write_table(frame, self.folder / "tables", name), how))

    def figure(self, fig, name: str, how: str) -> None:
        self.items.append(("figure", figures.save(fig, self.folder / "figures", name), how))

    def markdown(self) -> str:
        lines = ["# MIP order-effects report", ""]
        if self.notes:
            lines += ["## Data notes", ""] + [f"- {n}" for n in self.notes] + [""]
        lines += [
            "## Choices",
            "",
            "- Accuracy is valid-only unless marked 'all' (invalid counts as wrong); per selection seed, pooled over "
            "tasks, majority labels and patterns (random over its order seeds); mean ± sd (ddof = 1) over seeds.",
            "- Δ = mean over seeds of Acc_s(π⁺) − Acc_s(π⁻), π± chosen by mean accuracy; seeds lacking a valid "
            "experiment of either pattern drop out; † marks one paired seed, ‡ two.",
            "- Intervals: 95 % cluster bootstrap over instance sets (seed × task × majority label), 2,000 resamples.",
            "- Paired tests: exact McNemar on instance sets with one valid experiment per pattern; sign-flip "
            "permutation (10,000) where a pattern has several (random over order seeds).",
            "- Coverage: an ID counts when it appears in the trace as a standalone number 1..N (not inside `1,000`, "
            "`3.5`, `x2`, `200th`; a range `1-40` mentions 1 and 40).",
            "",
        ]
        for kind, paths, how in self.items:
            main = paths[0]
            rel = main.relative_to(self.folder)
            lines.append(f"## {main.stem} ({kind})")
            lines.append("")
            lines.append(how)
            lines.append("")
            if kind == "figure":
                lines.append(f"![{main.stem}]({rel})")
            else:
                lines.append(main.read_text(encoding="utf-8"))
            lines.append("Files: " + ", ".join(f"`{p.relative_to(self.folder)}`" for p in paths))
            lines.append("")
        return "\n".join(lines)


def strategy_tables(frame: pd.DataFrame) -> list[tuple[pd.DataFrame, str, str]]:
    """Cost and tokens per experiment for every model row; count errors and instance-level
    results where strategies recorded them (beyond the paper)."""
    out = []
    g = frame.groupby("model")
    cost = pd.DataFrame({
        "experiments": g.size(), "calls per experiment": g["calls"].mean(),
        "prompt tokens per experiment": g["prompt_tokens"].mean(),
        "completion tokens per experiment": g["completion_tokens"].mean(),
        "cost per experiment (USD)": g["cost"].mean(), "total cost (USD)": g["cost"].sum(min_count=1),
    }).reset_index().round(6)
    out.append((cost, "cost_and_tokens", "What each model row (strategies as their own rows) costs per experiment: "
                "calls, prompt and completion tokens, and cost where the server reported it — the price of robustness."))
    counted = frame.dropna(subset=["count_error_majority"])
    if not counted.empty:
        c = counted.groupby(["model", "pattern"])["count_error_majority"]
        table = pd.DataFrame({"experiments": c.size(), "mean error": c.mean(), "sd": c.std(ddof=1),
                              "mean |error|": c.apply(lambda e: e.abs().mean())}).reset_index().round(3)
        out.append((table, "count_errors", "Reported (count_report) or tallied (decomposed) majority-label count minus "
                    "the true count, per model and pattern: negative means majority instances were dropped."))
    decomposed = frame.dropna(subset=["instance_accuracy"])
    if not decomposed.empty:
        d = decomposed.groupby(["model", "pattern"])
        table = pd.DataFrame({"experiments": d.size(), "instance accuracy": d["instance_accuracy"].mean(),
                              "missing share": d["missing_share"].mean()}).reset_index().round(4)
        out.append((table, "decomposed_instances", "Decomposed strategy: accuracy of the per-instance labels and the share "
                    "of instances left without a label, per model and pattern."))
    return out


def coverage_notes(frame: pd.DataFrame) -> list[str]:
    """What is absent from the data: patterns or seeds a model lacks that others have."""
    notes = []
    all_patterns = set(frame["pattern"])
    all_seeds = set(frame["seed"])
    for model, group in frame.groupby("model"):
        missing_p = sorted(all_patterns - set(group["pattern"]), key=lambda p: PATTERNS.index(p) if p in PATTERNS else 99)
        missing_s = sorted(all_seeds - set(group["seed"]))
        if missing_p:
            notes.append(f"{model}: no experiments for pattern(s) {', '.join(missing_p)} — its Δ covers the others only.")
        if missing_s:
            notes.append(f"{model}: no experiments for seed(s) {missing_s}.")
        for pattern, g in group.groupby("pattern"):
            if not g["valid"].any():
                notes.append(f"{model}: every experiment of pattern {pattern} is invalid; it has no valid-only accuracy.")
    absent = [p for p in PATTERNS if p not in all_patterns]
    if absent:
        notes.append(f"Patterns absent from all records: {', '.join(absent)}.")
    return notes


def write_report(frame: pd.DataFrame, folder: str | Path, filter_dir: str | Path | None = None) -> Path:
    """Write tables, figures and report.md under ``folder``; return the report's path.

    With ``filter_dir`` holding filter.py's Table 4, it joins the report.
    """
    report = Report(Path(folder))
    report.folder.mkdir(parents=True, exist_ok=True)
    report.notes = coverage_notes(frame)
    core = frame[frame["prompt_variant"] == "standard"] if "standard" in set(frame["prompt_variant"]) else frame

    models = stats.model_table(core)
    report.table(tables.table2(models), "table2_models",
                 "Per model: valid-only accuracy, best–worst gap Δ with π⁺/π⁻, all-experiment accuracy and gap, and "
                 "invalid rate (Tables 2 and 6), over the standard-prompt records.")
    intervals = []
    for model, group in core.groupby("model"):
        gap = stats.best_worst_gap(group)
        low, high = stats.bootstrap_accuracy(group)
        row = {"model": model, "acc_ci_low": low, "acc_ci_high": high}
        if gap.best and gap.worst and gap.best != gap.worst:
            row["delta_ci_low"], row["delta_ci_high"] = stats.bootstrap_gap(group, gap.best, gap.worst)
            test = stats.paired_test(group, gap.best, gap.worst)
            row.update({"test": test.test, "pairs": test.pairs, "p_value": test.p_value})
        intervals.append(row)
    report.table(pd.DataFrame(intervals).round(4), "intervals_and_tests",
                 "Beyond the paper: 95 % bootstrap intervals of accuracy and Δ, and a paired test of π⁺ against π⁻ on "
                 "matched instance sets, with the number of pairs.")

    patterns = stats.pattern_table(core)
    report.table(patterns.assign(pattern=patterns["pattern"].astype(str)).round(4), "patterns_by_model",
                 "Valid-only accuracy per model and pattern, mean and sd over selection seeds, with the valid experiments behind it.")
    report.figure(figures.pattern_bars(patterns, _representative(patterns)), "fig2_representative_patterns",
                  "Per-model accuracy on the four representative patterns (Fig. 2); error bars are sd over seeds.")
    report.figure(figures.pattern_bars(patterns), "fig17_all_patterns", "All seven patterns per model (Fig. 17).")
    report.figure(figures.counterpart_pairs(patterns), "fig18_counterparts",
                  "Counterpart pairs overlaid with random as reference (Fig. 18).")
    report.figure(figures.error_types(core), "fig14_error_types",
                  "Share of mistakes and invalid outputs by kind per model (Fig. 14).")
    invalid = core.assign(cell=core["task"] + " / " + core["pattern"]).pivot_table(
        index="model", columns="cell", values="valid", aggfunc=lambda v: int((~v).sum()))
    total = core.assign(cell=core["task"] + " / " + core["pattern"]).pivot_table(
        index="model", columns="cell", values="valid", aggfunc="size")
    report.figure(figures.heatmap(invalid, "Invalid experiments per model, task and pattern (Fig. 15)", "invalid experiments",
                                  counts=total, scale=1.0, cmap="Reds"), "fig15_invalid_counts",
                  "Number of invalid experiments per model × task × pattern; (n=…) is the experiments in the cell.")
    per_task = stats.accuracy(core, ["model", "task"])
    report.figure(figures.heatmap(per_task.pivot(index="model", columns="task", values="acc_mean"),
                                  "Valid-only accuracy per model and task (Fig. 16)", "accuracy (%)",
                                  counts=per_task.pivot(index="model", columns="task", values="valid")),
                  "fig16_task_accuracy", "Valid-only accuracy per model and task, pooled over patterns and labels.")

    grid = core[["n", "p"]].drop_duplicates()
    if len(grid) > 1:
        cells = stats.accuracy(core, ["model", "pattern", "n", "p"])
        report.table(cells.round(4), "generalisability_cells", "Accuracy per (n, p) cell, model and pattern (§4.2).")
        for (model, pattern), sub in cells.groupby(["model", "pattern"]):
            report.figure(figures.heatmap(sub.pivot(index="p", columns="n", values="acc_mean"),
                                          f"{model}, {pattern}: accuracy over n × p (Fig. 3/19)", "accuracy (%)",
                                          counts=sub.pivot(index="p", columns="n", values="valid")),
                          f"fig3_np_{model}_{pattern}", f"Accuracy of {model} under {pattern} over instance count × proportion.")

    if frame["prompt_variant"].nunique() > 1:
        deltas = stats.variant_deltas(frame)
        report.table(deltas.round(4), "prompt_variants", "Accuracy difference of each prompt variant from standard, "
                     "mean and sd over seeds (§4.3, App. D.5).")
        if not deltas.empty:
            report.figure(figures.variant_deltas(deltas), "fig20_prompt_variants", "Prompt-variant deltas (Fig. 20).")

    if core["budget"].nunique() > 1:
        rows = []
        for (model, budget), group in core.groupby(["model", "budget"]):
            m = stats.model_table(group).iloc[0]
            rows.append({"model": model, "budget": budget, "acc": m["acc"], "acc_all": m["acc_all"],
                         "invalid_rate": m["invalid_rate"], "delta": m["delta"], "experiments": m["experiments"]})
        budget_table = pd.DataFrame(rows)
        report.table(budget_table.round(4), "budgets", "20K vs 100K side by side: valid-only, all-experiment, invalid "
                     "rate and Δ (App. C.5, Table 7).")
        report.figure(figures.budgets(budget_table), "fig9_budgets", "Budgets compared (Fig. 9–11).")
        by_budget = coverage.coverage_table(core, ["model", "budget"])
        if not by_budget.empty:
            report.table(by_budget.assign(bin=by_budget["bin"].astype(str)).round(4), "table7_coverage_by_budget",
                         "Coverage bins per model and budget, with accuracy per bin (App. C.5.4, Table 7; Fig. 12/13).")

    cov = coverage.coverage_table(core)
    if not cov.empty:
        report.table(cov.assign(bin=cov["bin"].astype(str)).round(4), "table3_coverage",
                     "Valid experiments with a reasoning trace per coverage bin, with their share and accuracy (Table 3).")
        for (n, p), _ in core.groupby(["n", "p"]):
            rates = coverage.mention_rates(core[(core["n"] == n) & (core["p"] == p)], int(n))
            if not rates.empty:
                report.figure(figures.mention_rates(rates, int(n), float(p)), f"fig21_mention_rates_n{n}_p{p}",
                              f"Per-ID mention rate at n = {n}, p = {p}: pooled over patterns (Fig. 5), then per "
                              "pattern with block boundaries (Fig. 21).")
        if len(grid) > 1:
            traced = coverage.with_coverage(core)
            for model, sub in traced.groupby("model"):
                cell = sub.groupby(["n", "p"])["mentioned"].agg(["mean", "size"]).reset_index()
                report.figure(figures.heatmap(cell.pivot(index="p", columns="n", values="mean"),
                                              f"{model}: mean mentioned IDs over n × p (Fig. 22/23)", "mentioned IDs",
                                              counts=cell.pivot(index="p", columns="n", values="size"), scale=1.0,
                                              fmt="{:.0f}"),
                              f"fig22_coverage_{model}", f"Mean count of mentioned IDs per (n, p) cell for {model}.")
    else:
        report.notes.append("No valid experiment has a reasoning trace: coverage tables and figures are left out.")

    for table, name, how in strategy_tables(frame):
        report.table(table, name, how)
    errors = frame.dropna(subset=["position_errors"])
    if not errors.empty:
        report.figure(figures.position_errors(errors), "position_error_rates",
                      "Decomposed strategy: per-instance error rate against position, per pattern (missing labels left out).")

    table4 = Path(filter_dir).expanduser() / "table4_agreement.csv" if filter_dir else None
    if table4 is not None and table4.is_file():
        report.table(pd.read_csv(table4), "table4_agreement",
                     "Instance filtering (App. C.1, Table 4): per task, the share and count of pool instances answered "
                     "correctly by every filter model, by none, and by exactly one.")

    ref = stats.reference_calculation()
    report.table(pd.DataFrame([ref]).round(12), "reference_c4",
                 "App. C.4: independent predictions at q = 0.9 on 1,100 + 900 instances; exact binomial probability "
                 "of a reversed or tied majority.")
    path = report.folder / "report.md"
    path.write_text(report.markdown(), encoding="utf-8")
    return path


def _representative(patterns: pd.DataFrame) -> tuple[str, ...] | None:
    """The four representative patterns of Fig. 2 that the data hold (None: all)."""
    present = set(patterns["pattern"].astype(str))
    chosen = tuple(p for p in figures.REPRESENTATIVE if p in present)
    return chosen or None
