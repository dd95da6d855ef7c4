"""mip.show's listing of many records: one row each, with what tells two rows of a sweep apart
(task, seed, pattern, order seed, majority label, verdict), filtered by ``key=value`` words.

    python -m mip.show results/sweeps/2026-12-01/10-00-00 verdict=incorrect pattern=majority_last task=ner seed=1

A filter takes one value or several (``verdict=incorrect,invalid``: either); filters of different
keys must all hold. Rows are sorted by model, task, pattern (in App. C.3's order), seed, order seed
and majority label, so the experiments of one instance set sit together.

>>> filters(["verdict=incorrect", "seed=1,2"]) == {"verdict": {"incorrect"}, "seed": {"1", "2"}}
True
>>> filters(["colour=red"])
Traceback (most recent call last):
...
ValueError: unknown filter 'colour'; filter by budget, invalid_kind, majority, ... (key=value, or key=a,b for either)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mip.experiment.instances import PATTERNS
from mip.experiment.records import Record

#: What a record can be filtered by: the value a filter compares, as text.
FIELDS: dict[str, Callable[[Record], object]] = {
    "model": lambda r: r.experiment.model,
    "task": lambda r: r.experiment.task,
    "n": lambda r: r.experiment.n,
    "p": lambda r: r.experiment.p,
    "majority": lambda r: r.experiment.majority_label,
    "seed": lambda r: r.experiment.seed,
    "pattern": lambda r: r.experiment.pattern,
    "order_seed": lambda r: r.experiment.order_seed,
    "prompt_variant": lambda r: r.experiment.prompt_variant,
    "budget": lambda r: r.experiment.budget,
    "strategy": lambda r: r.experiment.strategy,
    "verdict": lambda r: r.verdict.value if hasattr(r.verdict, "value") else r.verdict,
    "invalid_kind": lambda r: getattr(r.invalid_kind, "value", r.invalid_kind),
}


def filters(words: Iterable[str]) -> dict[str, set[str]]:
    """``key=value`` words as {key: accepted values}; ValueError names an unknown key."""
    out: dict[str, set[str]] = {}
    for word in words:
        key, _, value = word.partition("=")
        if key not in FIELDS:
            known = sorted(FIELDS)
            raise ValueError(f"unknown filter {key!r}; filter by {', '.join(known[:-1])} or {known[-1]} (key=value, "
                             "or key=a,b for either)")
        out.setdefault(key, set()).update(v.strip() for v in value.split(",") if v.strip())
    return out


def _text(value: object) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def matching(records: Iterable[Record], wanted: dict[str, set[str]]) -> list[Record]:
    """The records every filter accepts, sorted as the listing shows them."""
    kept = [r for r in records if all(_text(FIELDS[k](r)) in values or (k == "p" and _same_p(FIELDS[k](r), values))
                                      for k, values in wanted.items())]
    order = {name: i for i, name in enumerate(PATTERNS)}
    e = lambda r: r.experiment  # noqa: E731
    return sorted(kept, key=lambda r: (e(r).model, e(r).task, order.get(e(r).pattern, len(order)), e(r).pattern,
                                       e(r).seed, -1 if e(r).order_seed is None else e(r).order_seed,
                                       e(r).majority_label, r.key))


def _same_p(p: object, values: set[str]) -> bool:
    """``p=0.6`` matches a stored 0.6 however its float was written."""
    try:
        return any(abs(float(v) - float(p)) < 1e-9 for v in values)  # type: ignore[arg-type]
    except ValueError:
        return False


def why_none(records: list[Record], wanted: dict[str, set[str]]) -> str:
    """What the records hold of each filtered field, for a filter that kept none."""
    held = {k: sorted({_text(FIELDS[k](r)) for r in records}) for k in wanted}
    return "; ".join(f"{k}: {', '.join(v[:8])}{' …' if len(v) > 8 else ''}" for k, v in held.items())


def table(records: list[Record]) -> str:
    """One row per record: key, model/task, seed, pattern, order seed, majority label, verdict."""
    rows = [("key", "model/task", "seed", "pattern", "order", "majority", "verdict")]
    for r in records:
        e = r.experiment
        verdict = _text(FIELDS["verdict"](r)) + (f" ({_text(FIELDS['invalid_kind'](r))})" if r.invalid_kind else "")
        rows.append((r.key, f"{e.model}/{e.task}", str(e.seed), e.pattern, _text(e.order_seed),
                     e.majority_label, verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
