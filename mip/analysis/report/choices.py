"""The "Choices" of report.md and report.html: where the paper leaves a choice, the one this report made.

>>> choices()[0].startswith("Every table and figure is computed inside one slice")
True
"""

from __future__ import annotations

from mip.analysis import inference

#: Each choice, in the order the report lists them (``{min_pairs}``: :data:`mip.analysis.inference.MIN_PAIRS`).
CHOICES = [
    "Every table and figure is computed inside one slice: model × (n, p) × budget × prompt variant × strategy × "
    "pool (filtered or not) × ordering family (core orderings, or the expanded shuffles). A table lists slices as "
    "rows, each labelled; nothing pools two slices.",
    "Comparisons are made on matched experiments only (mip.analysis.pairs): a prompt variant against the standard "
    "prompt, one budget against another, one (n, p) cell against another, a strategy against the single call, a "
    "filtered pool against the unfiltered one use the experiments both conditions hold (same model, task, pattern, n, "
    "p, majority label, selection and order seeds, and every other field but the compared one); beside each, the "
    "experiments held, matched and dropped per condition and task. A budget is its value (the output-token limit a "
    "record ran under), not its name.",
    "Accuracy is valid-only unless marked 'all' (invalid counts as wrong; a parsed tie −1 is valid and incorrect); "
    "per selection seed, pooled over tasks, majority labels and patterns (random over its order seeds); mean ± sd "
    "(ddof = 1) over seeds.",
    "Δ = mean over seeds of Acc_s(π⁺) − Acc_s(π⁻), π± chosen by mean accuracy within the slice; seeds lacking a "
    "valid experiment of either pattern drop out; † marks one paired seed, ‡ two (the paper's notation). Among tied "
    "patterns π⁺ is the first in the paper's pattern order (random, majority-first, majority-last, majority-edges, "
    "majority-middle, soft-majority-edges, soft-majority-middle), π⁻ the first of the tied worst; 'π⁺ / π⁻' names "
    "every tied pattern (`a = b`) by short names (first = majority_first, s.edges = soft_majority_edges, …), and "
    "π⁻ reads '–' where every pattern ties, none being worse.",
    "'Sets' counts instance sets (seed × task × majority label) with a valid experiment: the evidence behind a row.",
    "Beyond the paper: 95 % cluster-bootstrap intervals over instance sets (2,000 resamples) and paired tests of π⁺ "
    "against π⁻ (exact McNemar; sign-flip permutation where random has several orders) need at least "
    "{min_pairs} sets or pairs, else they read 'not testable' — fewer cannot reach p < 0.05.",
    "Coverage: an ID counts when it appears in the trace as a standalone number 1..N (mip.analysis.coverage): "
    "a list `1,2,3` mentions 1, 2 and 3; a range `1-40` mentions 1 and 40; signed numbers (`-1`), decimals "
    "(`3.5`), thousands (`1,000`) and numbers glued to letters (`x2`, `200th`) mention none. Table 3 bins "
    "every valid experiment; those without a trace form the 'no trace' row (the paper's models all had traces). "
    "Per-ID mention rates (Fig. 5) and mean coverage (Fig. 22) are over valid experiments with a trace (the paper "
    "is silent on traceless ones).",
    "Pooled trace figures (Fig. 5, Fig. 22) pool the models whose config declares full reasoning traces (`traces: "
    "full`: the paper's four, §5.1, footnote 10), or those analyze.py's `coverage.models` names; their titles name "
    "them. Summaries (Grok 4.1 Fast) and planted simulated traces are never pooled by default; per-model figures "
    "are always drawn.",
    "A figure with nothing to show is not drawn: the report says why in its place. Counts of zero take the colour "
    "map's lightest colour; accuracy and rate axes run 0–100; missing values read '–'.",
    "Fig. 18 and Fig. 20 stay inside slices: Fig. 18 has one row of task panels per slice (the paper's per task), "
    "Fig. 20 one heatmap per prompt variant, per model and pattern, mean ± sd over selection seeds.",
    "Fig. 3: ± sd over the random pattern's order seeds (accuracy per order seed pooled over tasks and labels), as "
    "the paper's caption says; structured patterns carry no sd.",
]


def choices() -> list[str]:
    """The choices as the report prints them."""
    return [c.format(min_pairs=inference.MIN_PAIRS) for c in CHOICES]
