"""Study slices: the one definition of what may be pooled (docs/store.md).

A *slice* is model × (n, p) × budget × prompt variant × strategy × pool (filtered or not)
× ordering family (the core orderings, or the expanded shuffles of §5.2.1: records with
``shuffle_seed`` set). Every number of the report, of attribution and of the audit is
computed inside one slice; a table may list several slices as rows, each row labelled.

Each report section picks its slices as the paper does (:func:`sections`):

- core (Tables 2, 6, 3; Figs. 2, 5, 14–18): standard prompt, single call, core orderings,
  at the core setting (n = 2,000, p = 0.55 unless configured);
- budgets (Table 6 rows, Fig. 9): the core section's slices of models run at several budgets;
- generalisability (Fig. 3, 22): standard prompt, single call, core orderings, models with
  more than one (n, p) cell;
- prompt_variants (Table 5, Fig. 4): single call, core orderings, the core setting, models
  run with more than one prompt variant;
- strategies (beyond the paper): strategies other than single call, core orderings;
- expanded_orderings (§5.2.1): records with a shuffle seed.

Records in no section are counted by :func:`unassigned`, never pooled into one.

>>> frame = add_columns(load_local(["results/store"]))      # doctest: +SKIP
>>> restrict(frame, Where(budget="100k", model=["a", "b"]))   # doctest: +SKIP

Exercised by ``pytest tests/test_analyze.py``.

>>> row = {"n": 2000, "p": 0.55, "budget": "20k"}
>>> label(row, ["n", "p", "budget"]), file_tag(row, ["n", "p", "budget"])
('n=2000 p=0.55 budget=20k', 'n2000_p0.55_20k')
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields
from typing import Optional

import pandas as pd

from mip.analysis import cell_grid
from mip.config import WhereConfig

#: The slice dimensions, in the order the report names them.
SLICE = ["model", "n", "p", "budget", "prompt_variant", "strategy", "pool", "family"]
#: A slice without its model: the setting that a table's rows (one per model) share.
SETTING = [c for c in SLICE if c != "model"]
#: The paper's core setting (§3.5).
CORE_N, CORE_P = 2000, 0.55


Where = WhereConfig


def add_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``pool`` (filtered | unfiltered | unknown: a source without the field, e.g. W&B tables)
    and ``family`` (core | expanded) from the record fields, in place."""
    flag = frame["pool_filtered"] if "pool_filtered" in frame else pd.Series(None, index=frame.index, dtype=object)
    frame["pool"] = flag.map({True: "filtered", False: "unfiltered"}).fillna("unknown").astype(object)
    shuffled = frame["shuffle_seed"].notna() if "shuffle_seed" in frame else False
    frame["family"] = pd.Series("core", index=frame.index, dtype=object).mask(shuffled, "expanded")
    return frame


def restrict(frame: pd.DataFrame, where: Where | None) -> pd.DataFrame:
    """The rows that satisfy every set field of ``where``; a value that matches nothing is an error."""
    if where is None:
        return frame
    keep = pd.Series(True, index=frame.index)
    for f in fields(where):
        value = getattr(where, f.name)
        if value is None:
            continue
        wanted = list(value) if isinstance(value, (list, tuple)) else [value]
        column = "base_model" if f.name == "model" and "base_model" in frame else f.name
        have = frame[column]
        match = have.isin(wanted) | have.astype(str).isin([str(w) for w in wanted])
        if f.name == "model":  # a strategy row "m [decomposed]" is also selected by its shown name
            match |= frame["model"].isin(wanted)
        if not match.any():
            raise SliceError(f"where.{f.name}={value} matches no record; the records hold "
                             f"{sorted(map(str, have.dropna().unique()))[:20]}.")
        keep &= match
    return frame[keep]


class SliceError(ValueError):
    """A restriction that selects nothing: the message lists what the records hold."""


def label(row: pd.Series | dict, keys: list[str] = SETTING) -> str:
    """``n=2000 p=0.55 budget=20k …`` for the slice (or setting) of ``row``."""
    return " ".join(f"{k}={row[k]}" for k in keys)


def budget_order(values) -> list[str]:
    """Budget labels by the output-token limit they state, smallest first (20k before 100k), then
    names that state none (smoke), by name."""
    from mip.config.budgets import tokens_of

    return sorted({str(v) for v in values}, key=lambda b: (tokens_of(b) is None, tokens_of(b) or 0, b))


def by_budget(table: pd.DataFrame, first: list[str] = ["model"]) -> pd.DataFrame:
    """``table`` sorted by ``first`` and then its budgets by value (20k before 100k), stably: rows
    within one model and budget (a table's bins, patterns) keep their order.

    >>> by_budget(pd.DataFrame({"model": "m", "budget": ["100k", "20k"]}))["budget"].tolist()
    ['20k', '100k']
    """
    if "budget" not in table.columns or table.empty:
        return table
    rank = {b: i for i, b in enumerate(budget_order(table["budget"]))}
    by = [c for c in first if c in table.columns and c != "budget"]
    return table.sort_values([*by, "budget"], kind="stable", key=lambda c: c.astype(str).map(rank)
                             if c.name == "budget" else c).reset_index(drop=True)


def file_tag(row: pd.Series | dict, keys: list[str]) -> str:
    """The slice as a file-name part: ``n2000_p0.55_20k_standard_single_call_unfiltered_core``."""
    parts = [f"n{row['n']}" if k == "n" else f"p{row['p']}" if k == "p" else str(row[k]) for k in keys]
    return "_".join(parts).replace("/", "-").replace(" ", "")


@dataclass
class Sections:
    """Each report section's records; ``rest`` are the records no section takes."""

    core: pd.DataFrame
    budgets: pd.DataFrame
    generalisability: pd.DataFrame
    prompt_variants: pd.DataFrame
    strategies: pd.DataFrame
    expanded: pd.DataFrame
    rest: pd.DataFrame
    core_setting: tuple[int, float] | None
    notes: list[str]
    core_text: str = ""
    """What the core section took as its core (n, p), for the report's header."""


def _with_several(frame: pd.DataFrame, by: list[str], column: str) -> pd.DataFrame:
    """Rows of the groups ``by`` that hold more than one value of ``column``."""
    if frame.empty:
        return frame
    counts = frame.groupby(by, dropna=False)[column].transform("nunique")
    return frame[counts > 1]


def sections(frame: pd.DataFrame, core: Optional[tuple[int, float]] = (CORE_N, CORE_P)) -> Sections:
    """Split ``frame`` (with :func:`add_columns`) into the paper's sections.

    ``core`` is the core (n, p); None takes, as the core, every (n, p) that a model ran
    with more than one selection seed (the core's repetition, §3.5) — the choice is noted.
    Where no standard-prompt record sits at ``core``, each (n, p) the records hold is taken
    as a core cell of its own, and noted: the analysis is never empty, and never pools cells.
    """
    notes: list[str] = []
    single = frame["strategy"] == "single_call"
    core_family = frame["family"] == "core"
    base = frame[single & core_family]
    standard = base[base["prompt_variant"] == "standard"]
    if core is not None:
        at_core = (base["n"] == core[0]) & ((base["p"] - core[1]).abs() < 1e-9)
        core_text = f"n = {core[0]}, p = {core[1]}."
        if not (at_core & (base["prompt_variant"] == "standard")).any() and not standard.empty:
            # Never an empty analysis: each (n, p) the records hold is a core cell of its own
            # (the core section computes per (n, p), so no two cells are pooled).
            held = _cells(standard)
            notes.append(f"No standard-prompt record is at the core setting n = {core[0]}, p = {core[1]}: each (n, p) "
                         f"cell the records hold is analysed as its own core cell: {held}. Pass core=[n,p] to take "
                         "one as the core.")
            at_core = pd.Series(True, index=base.index, dtype=bool)
            core, core_text = None, f"each (n, p) the records hold, as its own core cell: {held}."
    else:
        seeds = standard.groupby(["base_model", "n", "p"])["seed"].transform("nunique")
        repeated = standard.loc[seeds > 1, ["n", "p"]].drop_duplicates()
        settings = {(int(n), float(p)) for n, p in repeated.itertuples(index=False)}
        at_core = pd.Series([(n, p) in settings for n, p in zip(base["n"], base["p"])], index=base.index, dtype=bool)
        notes.append("Core setting: every (n, p) that a model ran with several selection seeds "
                     f"({sorted(settings) or 'none'}); the paper's is n = {CORE_N}, p = {CORE_P}.")
        core_text = "every (n, p) run with several seeds."
    core_rows = base[at_core & (base["prompt_variant"] == "standard")]
    taken = pd.Series(False, index=frame.index)
    parts = {
        "core": core_rows,
        "budgets": _with_several(core_rows, ["base_model", "n", "p", "pool"], "budget"),
        "generalisability": cell_grid.matched_grid(standard, notes),
        "prompt_variants": _with_several(base[at_core], ["base_model", "n", "p", "budget", "pool"], "prompt_variant"),
        "strategies": frame[~single & core_family],
        "expanded": frame[~core_family],
    }
    for part in parts.values():
        taken[part.index] = True
    return Sections(**parts, rest=frame[~taken], core_setting=core, notes=notes, core_text=core_text)


def _cells(frame: pd.DataFrame) -> str:
    """The (n, p) cells ``frame`` holds: ``(20, 0.6), (50, 0.7)``."""
    cells = sorted({(int(n), float(p)) for n, p in frame[["n", "p"]].drop_duplicates().itertuples(index=False)})
    return ", ".join(f"({n}, {p:g})" for n, p in cells)


def single_call_twins(frame: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """The single-call records of the slices each strategy of ``other`` ran in (its model, (n, p),
    budget, prompt variant, pool and family): the baseline a strategy is matched with
    (:func:`mip.analysis.report.strategy_section.compared`), whose note then counts what the single
    call held there, matched and dropped — not only the experiments both hold."""
    single = frame[frame["strategy"] == "single_call"]
    where = ["base_model", *[c for c in SETTING if c != "strategy"]]
    ran = other[where].drop_duplicates()
    return single.merge(ran, on=where, how="inner").drop_duplicates("key") if "key" in single else \
        single.merge(ran, on=where, how="inner")


def unassigned(rest: pd.DataFrame) -> pd.DataFrame:
    """Records in no section, counted per slice."""
    if rest.empty:
        return pd.DataFrame(columns=[*SLICE, "experiments"])
    return rest.groupby(SLICE, dropna=False).size().rename("experiments").reset_index()


def _sortable(value) -> tuple:
    """Numbers by value, then words: n = 100 after n = 20."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value:
        return (0, float(value), "")
    return (1, 0.0, str(value))


def of(frame: pd.DataFrame, keys: list[str] = SLICE):
    """Iterate ``(slice row, records)`` over the slices (or settings) of ``frame``."""
    if frame.empty:
        return
    groups = [(dict(zip(keys, v if isinstance(v, tuple) else (v,))), g)
              for v, g in frame.groupby(keys, dropna=False, sort=True)]
    if "budget" in keys:  # budgets by their value (20k before 100k); groupby's order otherwise
        rank = {b: i for i, b in enumerate(budget_order(frame["budget"]))}
        first = {k: {v: i for i, v in enumerate(sorted({row[k] for row, _ in groups}, key=_sortable))} for k in keys}
        groups.sort(key=lambda item: tuple(rank.get(str(item[0][k]), -1) if k == "budget" else first[k][item[0][k]]
                                           for k in keys))
    yield from groups


def budget_pairs(group: pd.DataFrame) -> list[tuple[str, str, object]]:
    """The budget comparisons of one setting's records (:func:`mip.analysis.pairs.each_pair`,
    smaller budget first): ``[(file-name suffix, words, Matched)]``. A setting with two budgets
    has one comparison and no suffix (``budgets_<tag>``); with more, each pair is its own
    (``budgets_<tag>_20k_vs_100k``), so a few experiments at a third budget leave the others'
    comparison whole."""
    from mip.analysis import pairs
    from mip.config.budgets import slug

    found = pairs.each_pair(group, "budget", budget_order(group["budget"]))
    several = len(found) > 1
    return [(f"_{slug(a)}_vs_{slug(b)}" if several else "", f"{a} against {b}", both) for a, b, both in found]

