"""Matched experiments: the one rule by which the report compares two conditions.

A prompt variant against the standard prompt, 100k against 20k, one (n, p) cell against another,
a strategy against the single call: each comparison is made on the experiments that every
compared condition holds — the same model, task, pattern, n, p, majority label, selection seed,
order seed, shuffle seed, budget (by its value), prompt variant, strategy, pool, ordering family,
answer-shaping settings and instance set drawn (:data:`IDENTITY`, with the columns
:mod:`mip.experiment.identity` gives every record), less the compared factor. The same identity
says which records are one experiment stored twice (:func:`mip.analysis.results.load_local`
counts one). Means, deltas, intervals and tests of a comparison
use only these; what a condition holds beyond them is counted (:attr:`Matched.counts`) and said
beside the comparison (:meth:`Matched.note`), never pooled in. A partial grid (the variants run
on one task of five) thus never reads a difference between tasks as an effect of the prompt.

>>> frame = pd.DataFrame({"base_model": "m", "task": ["a", "b", "a"],
...                       "prompt_variant": ["standard", "standard", "hint"], "correct": [True, False, True]})
>>> kept = matched(frame, "prompt_variant")
>>> kept.frame["task"].tolist(), kept.counts["dropped"].tolist()
(['a', 'a'], [0, 0, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

#: What makes two experiments the same but for the compared factor (``base_model``: a strategy
#: row's model is shown as ``m [strategy]``; the model asked is the same).
IDENTITY = ["base_model", "task", "n", "p", "majority_label", "seed", "pattern", "order_seed", "shuffle_seed",
            "budget", "prompt_variant", "strategy", "pool", "family", "settings", "strategy_settings", "instances"]

#: Identity fields a compared factor sets by itself: another (n, p) cell or another pool draws
#: other instances, a strategy has settings of its own, so those are compared on the rest of the identity.
DRAWN_BY = {"n": "instances", "p": "instances", "pool": "instances", "strategy": "strategy_settings"}

#: How the note names the identity fields.
WORDS = {"base_model": "model", "majority_label": "majority label", "seed": "selection seed",
         "order_seed": "order seed", "shuffle_seed": "shuffle seed", "prompt_variant": "prompt variant",
         "family": "ordering family", "instances": "instance set", "strategy_settings": "strategy settings"}


@dataclass
class Matched:
    """The experiments of a comparison that every compared condition holds, and the counts of
    those held, matched and dropped per group, condition and task."""

    frame: pd.DataFrame
    counts: pd.DataFrame
    """Columns: the ``within`` groups, the factor's columns, ``task``, ``held``, ``matched``, ``dropped``."""
    factor: list[str]
    within: list[str] = field(default_factory=lambda: ["base_model"])
    order: list[str] = field(default_factory=list)
    """Conditions in the order the note names them (the reference first); others after, sorted."""
    key: list[str] = field(default_factory=list)
    """The identity columns an experiment was matched on: one value of them, one matched experiment."""
    free: list[str] = field(default_factory=list)
    """Columns that are a condition's own replicates, in neither the identity nor the factor
    (a random pattern's order seeds)."""
    reason: str = ""
    """Why nothing matched, where the identity's settings or instance sets are what differ."""

    @property
    def empty(self) -> bool:
        return self.frame.empty

    def note(self) -> str:
        """The counts in words, per group: ``Matched on … but prompt_variant: m — standard: 28 held,
        14 matched, 14 dropped (ner 14); hint: 14 held, 14 matched, 0 dropped.``"""
        if self.counts.empty:
            return ""
        groups = []
        within = self.within or ["_all"]
        for key, group in self.counts.assign(_all="").groupby(within, dropna=False, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            parts = {}
            for cond, rows in group.groupby(self.factor, dropna=False, sort=True):
                cond = condition_label(self.factor, cond if isinstance(cond, tuple) else (cond,))
                held, kept = int(rows["held"].sum()), int(rows["matched"].sum())
                where = ", ".join(f"{t} {int(d)}" for t, d in zip(rows["task"], rows["dropped"]) if d)
                parts[cond] = (f"{cond}: {held} held, {kept} matched, {held - kept} dropped"
                               + (f" ({where})" if where else ""))
            rank = {c: i for i, c in enumerate(self.order)}
            text = "; ".join(parts[c] for c in sorted(parts, key=lambda c: (rank.get(c, len(rank)), c)))
            if not group["matched"].any():
                text += (" — no matched pair, so this comparison is not made"
                         + (f" ({self.reason})" if self.reason else ""))
            groups.append(f"{' · '.join(map(str, key))} — {text}" if self.within else text)
        same = ", ".join(WORDS.get(c, c) for c in IDENTITY
                         if c in self.key or (c == "base_model" and "model" in self.key))
        return (f"Compared on matched experiments only (same {same}; {' and '.join(self.factor)} compared): "
                + ". ".join(groups) + ".")


def condition_label(factor: Sequence[str], values: Sequence) -> str:
    """``hint``; ``(n=2000, p=0.55)`` for a factor of several columns."""
    if len(factor) == 1:
        return str(values[0])
    return "(" + ", ".join(f"{c}={v:g}" if isinstance(v, float) else f"{c}={v}" for c, v in zip(factor, values)) + ")"


def identity_key(columns: Sequence[str], factor: Sequence[str], free: Sequence[str] = ()) -> list[str]:
    """The columns of :data:`IDENTITY` among ``columns`` that match two experiments compared on
    ``factor`` (less ``free`` and what the factor draws by itself, :data:`DRAWN_BY`)."""
    identity = [("model" if c == "base_model" and "base_model" not in columns else c) for c in IDENTITY]
    drawn = {DRAWN_BY[c] for c in factor if c in DRAWN_BY}
    return [c for c in identity if c in columns and c not in factor and c not in free and c not in drawn]


def matched(frame: pd.DataFrame, factor: str | Sequence[str], within: Sequence[str] = ("base_model",),
            order: Sequence[str] = (), free: Sequence[str] = ()) -> Matched:
    """The rows of ``frame`` whose experiment every value of ``factor`` present in its ``within``
    group holds (a group with one condition has nothing to compare: all of it is dropped).
    ``order``: the conditions as the note names them first (the reference); ``free``: identity
    columns that are a condition's own replicates, not matched (:func:`patterns`); ``within=()``:
    the whole frame is one group."""
    factor, within, free = [factor] if isinstance(factor, str) else list(factor), list(within), list(free)
    if "base_model" not in frame.columns:  # a table built without results.py's columns: its model is the model asked
        within = ["model" if c == "base_model" else c for c in within]
    key = identity_key(frame.columns, factor, free)
    if frame.empty:
        counts = pd.DataFrame(columns=[*within, *factor, "task", "held", "matched", "dropped"])
        return Matched(frame, counts, factor, within, list(order), key, free)
    # Group numbers, not strings joined per row (50,000 records): a missing order seed (structured
    # patterns) is a value like any other (dropna=False).
    ident = frame.groupby(key, dropna=False, sort=False).ngroup()
    cond = frame.groupby(factor, dropna=False, sort=False).ngroup()
    group = frame.groupby(within, dropna=False, sort=False).ngroup() if within else pd.Series(0, index=frame.index)
    conditions = cond.groupby(group).transform("nunique")
    holding = cond.groupby(ident).transform("nunique")
    keep = (holding == conditions) & (conditions > 1)
    tasks = frame["task"] if "task" in frame.columns else pd.Series("", index=frame.index, name="task")
    g = frame[[*within, *factor]].assign(_kept=keep, task=tasks).groupby([*within, *factor, "task"], dropna=False,
                                                                         sort=True)["_kept"]
    counts = pd.DataFrame({"held": g.size(), "matched": g.sum()}).reset_index()
    counts["matched"] = counts["matched"].astype(int)
    counts["dropped"] = counts["held"] - counts["matched"]
    reason = "" if keep.any() or not (conditions > 1).any() else _why_none(frame, factor, key, conditions)
    return Matched(frame[keep], counts, factor, within, list(order), key, free, reason)


#: What the note says where only these identity fields keep the conditions apart.
_APART = {"instances": "the conditions hold different instance sets: another pool version or other instance IDs",
          "settings": "the conditions ran under different answer-shaping settings"}


def _why_none(frame: pd.DataFrame, factor: list[str], key: list[str], conditions: pd.Series) -> str:
    """Which of the settings and the instance set keeps every experiment apart, where without it some would match."""
    for apart, why in _APART.items():
        if apart not in key:
            continue
        rest = [c for c in key if c != apart]
        ident = frame.groupby(rest, dropna=False, sort=False).ngroup() if rest else pd.Series(0, index=frame.index)
        cond = frame.groupby(factor, dropna=False, sort=False).ngroup()
        if ((cond.groupby(ident).transform("nunique") == conditions) & (conditions > 1)).any():
            return why
    return ""


#: A pattern's own replicates: the random pattern's order seeds, a structured pattern's shuffle seeds.
PATTERN_REPLICATES = ["order_seed", "shuffle_seed"]


def patterns(frame: pd.DataFrame, within: Sequence[str] = ()) -> Matched:
    """Patterns compared within one slice (π⁺ against π⁻, Table 2's Δ, the paired test): the
    experiments every pattern of ``frame`` holds, the same in every identity field but the pattern
    and its own replicates (:data:`PATTERN_REPLICATES`: random's order seeds are its repeats of
    one experiment)."""
    return matched(frame, "pattern", within, free=PATTERN_REPLICATES)


def two_patterns(frame: pd.DataFrame, a: str, b: str) -> Matched:
    """Patterns ``a`` and ``b`` on the experiments both hold (:func:`patterns`): the pairs of
    π⁺ against π⁻ in the paired test, its interval and report.html's list of them."""
    return patterns(frame[frame["pattern"].isin([a, b])])


def valid_pairs(frame: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """The pairing rule of patterns ``a`` and ``b``: their valid experiments (:func:`two_patterns`)
    whose matched experiment holds a valid one of each. :func:`mip.analysis.inference.paired_test`
    tests these (grouped by :func:`pair_key`), and report.html lists these behind the test.

    >>> rows = pd.DataFrame({"base_model": "m", "task": "t", "seed": [0, 0, 1, 1], "valid": [True, True, True, False],
    ...                      "pattern": ["majority_first", "majority_last"] * 2})
    >>> valid_pairs(rows, "majority_first", "majority_last")["seed"].tolist()
    [0, 0]
    """
    both = two_patterns(frame, a, b)
    valid = both.frame[both.frame["valid"]]
    if valid.empty:
        return valid
    held = valid.groupby(both.key, dropna=False)["pattern"].transform("nunique") == 2 if both.key else \
        pd.Series(valid["pattern"].nunique() == 2, index=valid.index)
    return valid[held]


def pair_key(frame: pd.DataFrame) -> list[str]:
    """The identity columns that make one pair of :func:`valid_pairs` (every one but the pattern and
    its replicates): ``pairs.groupby(pair_key(pairs))`` gives one group per pair."""
    return identity_key(frame.columns, ["pattern"], PATTERN_REPLICATES)


def against(frame: pd.DataFrame, factor: str, reference: str,
            within: Sequence[str] = ("base_model",)) -> dict[str, Matched]:
    """Each other value of ``factor`` matched with ``reference`` (a variant with the standard
    prompt): ``{value: Matched}``, in the order the values first appear."""
    out = {}
    for value in [v for v in pd.unique(frame[factor]) if v != reference]:
        out[str(value)] = matched(frame[frame[factor].isin([reference, value])], factor, within, [reference])
    return out


def each_pair(frame: pd.DataFrame, factor: str, order: Sequence[str],
              within: Sequence[str] = ("base_model",)) -> list[tuple[str, str, Matched]]:
    """Every two values of ``factor`` in ``order`` (20k and 100k; 20k and 999 tokens), each pair
    matched on its own (:func:`matched`): a third condition run on a few experiments does not
    shrink the others' comparison to what all three share. ``[(a, b, Matched)]``, a before b.

    >>> frame = pd.DataFrame({"base_model": "m", "task": "ner", "pattern": "majority_first",
    ...                       "seed": [0, 1, 0, 1, 0], "budget": ["20k", "20k", "100k", "100k", "999 tokens"]})
    >>> [(a, b, len(m.frame)) for a, b, m in each_pair(frame, "budget", ["999 tokens", "20k", "100k"])]
    [('999 tokens', '20k', 2), ('999 tokens', '100k', 2), ('20k', '100k', 4)]
    """
    present = [v for v in order if (frame[factor].astype(str) == v).any()]
    return [(a, b, matched(frame[frame[factor].astype(str).isin([a, b])], factor, within, [a]))
            for i, a in enumerate(present) for b in present[i + 1:]]


def variant_sets(group: pd.DataFrame) -> list[tuple[str, str, Matched]]:
    """The prompt-variant comparisons of one setting's records (Table 5, Fig. 4), per model and
    budget: ``[(file-name suffix, words, Matched)]``. Where every variant holds the same
    experiments as its comparison with the standard prompt, one comparison of them all, no
    suffix; else each variant against the standard prompt on what those two hold
    (:func:`against`, ``_hint``), so a variant run on other tasks or seeds than
    another costs only its own comparison."""
    from mip.config.budgets import slug

    within = ["base_model", "budget"]
    every = matched(group, "prompt_variant", within=within, order=["standard"])
    each = against(group, "prompt_variant", "standard", within)
    kept = {i for m in each.values() for i in m.frame.index}
    if len(each) < 2 or (not every.empty and kept <= set(every.frame.index)):
        return [("", "", every)]
    return [(f"_{slug(v)}", f"{v} against standard", m) for v, m in each.items()]
