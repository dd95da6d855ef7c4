"""The paper's metrics (§3.4, App. D.1–D.2) and honest statistics on top of them.

All functions take the analysis table of :mod:`mip.analysis.results` and are pure.

- Valid-only accuracy per selection seed: correct / valid, pooled over tasks, majority
  labels and patterns (random over its order seeds); mean ± standard deviation (ddof = 1)
  over seeds.
- All-experiment accuracy (invalid counts as wrong) and invalid rate by kind. The accuracy
  metrics are registered in :data:`METRICS`.
- Best and worst pattern π⁺, π⁻ by mean accuracy; Δ = mean over seeds of
  Acc_s(π⁺) − Acc_s(π⁻) with the sd of the paired differences, both on the experiments every
  pattern of the slice holds (:func:`mip.analysis.pairs.patterns`: the same task, selection
  seed, majority label … under each pattern); what a pattern holds beyond them is counted
  (``Gap.compared``), never compared. A seed without a valid experiment of either pattern
  drops out of the pairing; Δ is marked † with one paired seed and ‡ with two.
- Ties: patterns whose mean accuracies agree to :data:`TIE` are tied. π⁺ is the first of
  the best in the paper's pattern order (:data:`mip.experiment.instances.PATTERNS`: random,
  majority-first, majority-last, majority-edges, majority-middle, soft-majority-edges,
  soft-majority-middle), π⁻ the first of the worst among the others; the gap names every
  tied pattern (``best_tied``, ``worst_tied``), so a reader sees the choice.
Beyond the paper — intervals, paired tests and the App. C.4 reference calculation — is
:mod:`mip.analysis.inference`.

>>> frame = pd.DataFrame({"model": "m", "seed": [0, 0, 1, 1], "correct": [True, False, True, False],
...                       "valid": [True, True, True, False]})
>>> per_seed(frame)["acc"].tolist(), per_seed(frame, metric="all")["acc"].tolist()
([0.5, 1.0], [0.5, 0.5])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from mip.analysis import pairs
from mip.experiment.instances import PATTERNS
from mip.experiment.scoring import ACCURACIES, InvalidKind

#: An instance set: the experiments that share a selection (seed, task, majority label, n, p) and
#: the instances drawn (``instances``, :mod:`mip.experiment.identity`: a pool of another version
#: draws others at the same seed).
INSTANCE_SET = ["model", "seed", "task", "majority_label", "n", "p", "prompt_variant", "budget", "instances"]


def set_columns(frame: pd.DataFrame) -> list[str]:
    """The :data:`INSTANCE_SET` columns ``frame`` holds (a table built by hand may lack ``instances``)."""
    return [c for c in INSTANCE_SET if c in frame.columns]

#: Mean accuracies closer than this are a tie (they differ only by floating-point rounding).
TIE = 1e-9


def _rate(num: pd.Series, den: pd.Series) -> pd.Series:
    return num / den.where(den > 0)


@dataclass(frozen=True)
class Metric:
    """An accuracy metric: a rate per selection seed from one group's counts (columns
    ``correct``, ``valid``, ``experiments``; undefined where it divides by 0), averaged over
    seeds. Table 2 reports its mean ± sd and its Δ between π⁺ and π⁻ (:func:`model_table`)."""

    suffix: str
    """Its columns: ``acc<suffix>``, ``acc<suffix>_sd``, ``delta<suffix>`` … (the first metric's: none)."""
    label: str
    rate: Callable[[pd.DataFrame], pd.Series]


def _counted(name: str) -> Callable[[pd.DataFrame], pd.Series]:
    """The rate of one of the paper's accuracies (:data:`mip.experiment.scoring.ACCURACIES`)."""
    num, den = ACCURACIES[name]
    return lambda c: _rate(c[num], c[den])


#: The accuracy metrics, the paper's first: valid-only (§3.4) and all-experiment, invalid
#: counting as wrong (App. D.1–D.2). A new metric is one entry here (its rate from the counts):
#: Table 2 and its numbers get its accuracy and Δ, the budgets figure a panel.
METRICS: dict[str, Metric] = {
    "valid_only": Metric("", "valid-only accuracy", _counted("valid_only")),
    "all": Metric("_all", "all-experiment accuracy", _counted("all")),
}


def per_seed(frame: pd.DataFrame, by: Sequence[str] = ("model",), metric: str = "valid_only") -> pd.DataFrame:
    """Accuracy per seed within each group ``by`` by one of :data:`METRICS`: columns ``acc``,
    ``correct``, ``valid``, ``experiments``."""
    if metric not in METRICS:
        raise ValueError(f"Unknown metric {metric!r}; choose one of {', '.join(METRICS)}.")
    keys = [*by, "seed"]
    g = frame.groupby(keys, dropna=False)
    # ``experiments`` present: counts already summed per cell (model_table's sufficient statistics).
    size = g["experiments"].sum() if "experiments" in frame else g.size()
    out = pd.DataFrame({"correct": g["correct"].sum(), "valid": g["valid"].sum(), "experiments": size})
    out["acc"] = METRICS[metric].rate(out)
    return out.reset_index()


def accuracy(frame: pd.DataFrame, by: Sequence[str] = ("model",), metric: str = "valid_only") -> pd.DataFrame:
    """Mean and sd over seeds of per-seed accuracy, with the counts behind them."""
    seeds = per_seed(frame, by, metric)
    g = seeds.groupby(list(by), dropna=False)
    return pd.DataFrame({
        "acc_mean": g["acc"].mean(),
        "acc_sd": g["acc"].std(ddof=1),
        "seeds": g["acc"].count(),
        "valid": g["valid"].sum(),
        "experiments": g["experiments"].sum(),
    }).reset_index()


def invalid_rates(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Invalid rate overall and by kind (input_overflow, parse, truncated), per group."""
    kinds = [kind.value for kind in InvalidKind]
    flags = frame.assign(**{k: frame["invalid_kind"] == k for k in kinds}, invalid=~frame["valid"])
    g = flags.groupby(list(by), dropna=False)
    out = g[["invalid", *kinds]].mean().add_suffix("_rate")
    out["experiments"] = g.size()
    return out.reset_index()


@dataclass
class Gap:
    best: str | None
    worst: str | None
    delta: float | None
    sd: float | None
    paired_seeds: int
    marker: str
    """'†' for one paired seed, '‡' for two, '' otherwise."""
    best_tied: tuple[str, ...] = ()
    """Every pattern tied for the best mean accuracy, π⁺ first, in the paper's pattern order."""
    worst_tied: tuple[str, ...] = ()
    """Every other pattern tied for the worst, π⁻ first."""
    seeds: tuple = ()
    """The selection seeds Δ pairs (both π⁺ and π⁻ have an accuracy there)."""
    compared: pairs.Matched | None = None
    """The experiments the patterns are compared on (:func:`mip.analysis.pairs.patterns`), with
    the counts held, matched and dropped per pattern and task."""

    def paired(self) -> pd.DataFrame:
        """The experiments Δ rests on: π⁺'s and π⁻'s matched ones in the seeds it pairs."""
        if self.compared is None or not self.best:
            return pd.DataFrame(columns=["key", "pattern", "seed"])
        kept = self.compared.frame
        return kept[kept["pattern"].isin([self.best, self.worst]) & kept["seed"].isin(self.seeds)]

    def dropped(self) -> int:
        """Experiments of the slice left out of the pattern comparison (no match under every pattern)."""
        return 0 if self.compared is None else int(self.compared.counts["dropped"].sum())


#: Short pattern names for cells and printed tables (soft_majority_edges → s.edges); a legend says which.
SHORT = {p: p.replace("soft_majority_", "s.").replace("majority_", "") for p in PATTERNS}


def legend(patterns=PATTERNS) -> str:
    """``first = majority_first, …, s.middle = soft_majority_middle``: the short names in use."""
    return ", ".join(f"{SHORT[p]} = {p}" for p in patterns if p in SHORT and SHORT[p] != p)


def worse(best_tied, worst_tied) -> list[str]:
    """π⁻ and its ties as a reader should see them: none ('–') where every pattern ties for the
    best (π⁻ is then chosen among equals, and no pattern is worse).

    >>> worse(["random", "majority_first"], ["majority_first"]), worse(["random"], ["majority_last", "majority_middle"])
    ([], ['majority_last', 'majority_middle'])
    """
    return [] if set(worst_tied) <= set(best_tied) else list(worst_tied)


def _paper_order(patterns) -> list[str]:
    rank = {p: i for i, p in enumerate(PATTERNS)}
    return sorted(patterns, key=lambda p: (rank.get(p, len(rank)), p))


def best_worst_gap(frame: pd.DataFrame, metric: str = "valid_only", compared: pairs.Matched | None = None) -> Gap:
    """π⁺, π⁻ and Δ for one slice's experiments (§3.4; App. D.2 for ``metric='all'``), on the
    experiments every pattern holds (``compared``: :func:`mip.analysis.pairs.patterns` of
    ``frame``, where the caller has it)."""
    compared = pairs.patterns(frame, within=()) if compared is None else compared
    seeds = per_seed(compared.frame, ["pattern"], metric)
    means = seeds.groupby("pattern")["acc"].mean().dropna()
    if len(means) < 2:  # a gap needs two patterns with valid experiments
        return Gap(None, None, None, None, 0, "", compared=compared)
    means = means.reindex(_paper_order(means.index))
    best_tied = tuple(means.index[means >= means.max() - TIE])
    # π⁻ is the worst of the *other* patterns: when all tie, π⁺ ≠ π⁻ and Δ = 0 is still a comparison.
    rest = means.drop(best_tied[0])
    worst_tied = tuple(rest.index[rest <= rest.min() + TIE])
    best, worst = best_tied[0], worst_tied[0]
    table = seeds.pivot(index="seed", columns="pattern", values="acc")
    paired = (table[best] - table[worst]).dropna()
    marker = {1: "†", 2: "‡"}.get(len(paired), "")
    return Gap(best, worst, float(paired.mean()) if len(paired) else None,
               float(paired.std(ddof=1)) if len(paired) > 1 else None, len(paired), marker, best_tied, worst_tied,
               tuple(paired.index), compared)


def model_columns() -> list[str]:
    """The columns of :func:`model_table`, after its ``by`` columns."""
    columns = ["experiments", "valid", "sets"]
    for i, m in enumerate(METRICS.values()):
        columns += [f"acc{m.suffix}", f"acc{m.suffix}_sd", f"delta{m.suffix}", f"delta{m.suffix}_sd",
                    f"delta{m.suffix}_marker"]
        if i == 0:
            columns += ["paired_seeds", "best", "worst", "best_tied", "worst_tied", "patterns_matched",
                        "patterns_dropped"]
    return [*columns, "invalid_rate", "invalid_rate_sd"]


def model_table(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Table 2 / Table 6: per group ``by`` (a model, or a whole slice), each metric's accuracy
    and Δ (π⁺ and π⁻ by the first, valid-only, on the experiments every pattern of the group holds:
    ``patterns_matched``, ``patterns_dropped``), the invalid rate, and the instance sets behind them."""
    by = list(by)
    sets = sets_by(frame, by)
    rows = []
    for key, raw in frame.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        # The accuracies are functions of the counts per seed and pattern: sum once (50,000
        # records → a few hundred cells), then work on the cells.
        g = raw.groupby([*by, "seed", "pattern"], dropna=False, sort=False)
        group = pd.DataFrame({"correct": g["correct"].sum(), "valid": g["valid"].sum(),
                              "experiments": g.size()}).reset_index()
        # Δ compares patterns: on the experiments every pattern of the group holds (one rule: mip.analysis.pairs).
        compared = pairs.patterns(raw)
        for i, (name, m) in enumerate(METRICS.items()):
            acc, gap = accuracy(group, by, name).iloc[0], best_worst_gap(raw, name, compared)
            if i == 0:
                row.update(experiments=int(acc["experiments"]), valid=int(acc["valid"]),
                           sets=int(sets.get(key if len(by) > 1 else key[0], 0)),
                           paired_seeds=gap.paired_seeds, best=gap.best, worst=gap.worst,
                           best_tied=", ".join(gap.best_tied), worst_tied=", ".join(gap.worst_tied),
                           patterns_matched=len(compared.frame), patterns_dropped=gap.dropped())
            row.update({f"acc{m.suffix}": acc["acc_mean"], f"acc{m.suffix}_sd": acc["acc_sd"],
                        f"delta{m.suffix}": gap.delta, f"delta{m.suffix}_sd": gap.sd,
                        f"delta{m.suffix}_marker": gap.marker})
        invalid = per_seed(group, by).assign(rate=lambda d: 1 - d["valid"] / d["experiments"])["rate"]
        rows.append({**row, "invalid_rate": invalid.mean(), "invalid_rate_sd": invalid.std(ddof=1)})
    return pd.DataFrame(rows, columns=[*by, *model_columns()])


def sets_by(frame: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """Instance sets with a valid experiment, per group ``by``."""
    keys = list(dict.fromkeys([*by, *set_columns(frame)]))
    return frame.loc[frame["valid"], keys].drop_duplicates().groupby(list(by), dropna=False).size()


def random_order_sd(frame: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Fig. 3: the random pattern's accuracy per order seed (pooled over selection seeds,
    tasks and labels), mean and sd over order seeds, per group ``by``."""
    rand = frame[frame["pattern"] == "random"]
    g = rand.groupby([*by, "order_seed"], dropna=False)
    per = pd.DataFrame({"acc": _rate(g["correct"].sum(), g["valid"].sum())}).reset_index()
    out = per.groupby(list(by), dropna=False)["acc"].agg(order_mean="mean", order_sd=lambda a: a.std(ddof=1),
                                                         order_seeds="count")
    return out.reset_index()


def pattern_table(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Accuracy per pattern (mean ± sd over seeds) within each group, patterns in paper order."""
    table = accuracy(frame, [*by, "pattern"])
    table["pattern"] = pd.Categorical(table["pattern"], [p for p in PATTERNS if p in set(table["pattern"])]
                                      + sorted(set(table["pattern"]) - set(PATTERNS)))
    return table.sort_values([*by, "pattern"]).reset_index(drop=True)


def variant_deltas(frame: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Per group ``by`` (a model, or a model and pattern: Fig. 20) and prompt variant: accuracy
    minus the standard prompt's on the experiments both prompts hold (:func:`mip.analysis.pairs.matched`),
    per selection seed; mean and sd over the seeds, and the matched experiments behind them."""
    by = list(by)
    columns = [*by, "prompt_variant", "delta_mean", "delta_sd", "seeds", "matched"]
    if "standard" not in set(frame["prompt_variant"]):
        return pd.DataFrame(columns=columns)
    rows = []
    for variant, both in pairs.against(frame, "prompt_variant", "standard").items():
        seeds = per_seed(both.frame, [*by, "prompt_variant"])
        table = seeds.pivot_table(index=[*by, "seed"], columns="prompt_variant", values="acc", dropna=False)
        if both.empty or variant not in table.columns or "standard" not in table.columns:
            continue
        diff = (table[variant] - table["standard"]).dropna()
        size = both.frame[both.frame["prompt_variant"] == variant].groupby(by).size()
        for key, d in diff.groupby(level=by if len(by) > 1 else by[0]):
            key = key if isinstance(key, tuple) else (key,)
            rows.append({**dict(zip(by, key)), "prompt_variant": variant, "delta_mean": d.mean(),
                         "delta_sd": d.std(ddof=1), "seeds": len(d),
                         "matched": int(size.get(key if len(by) > 1 else key[0], 0))})
    return pd.DataFrame(rows, columns=columns)
