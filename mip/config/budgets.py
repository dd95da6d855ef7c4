"""A budget is its value: the output-token limit a job ran under (and its answer split, where
the model has one), not the name it carries.

``budget=smoke budget.max_tokens=999`` keeps the name ``smoke`` in the config; its records are
not smoke's and must not be pooled with them, and a refusal must name what was given. A name
stands for its value where the name says it (``20k``: 20,000), where its config does
(``stated_tokens``, which the job's config carries: smoke's is 320, and ``budget.max_tokens=999``
leaves it), or, for a name of neither, among records where every record of that name ran at the
one value; otherwise the value is named by its number, so ``smoke`` never labels records that
ran at 999.

>>> labels(["smoke", "smoke", "20k", "20k", "100k"], [320, 999, 20000, 320, 100000],
...        stated=[320, 320, 20000, 20000, None])
['smoke', '999 tokens', '20k', 'smoke', '100k']
>>> labels(["smoke", "20k", "20k"], [320, 320, 20000], [None, None, 2000])
['smoke', 'smoke', '20k (answer 2000)']
>>> labels(["smoke", "mine"], [999, 50], stated=[320, None])
['999 tokens', 'mine']
>>> slug("999 tokens"), slug("20k (answer 2000)"), slug("smoke")
('999tokens', '20k_answer2000', 'smoke')
>>> given("20k", 20000), given("20k", 300000), tokens_of("100k"), tokens_of("999 tokens"), tokens_of("smoke")
('20k', 'budget.max_tokens=300000', 100000, 999, None)
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def tokens_of(name: str) -> int | None:
    """The output-token limit a budget's name states: ``20k`` 20,000, ``999 tokens`` 999; None
    for a name that states none (``smoke``)."""
    match = re.fullmatch(r"(\d+)\s*(k|tokens)?", str(name).split(" (answer")[0].strip())
    return None if not match else int(match[1]) * (1000 if match[2] == "k" else 1)


def labels(names: Sequence, tokens: Sequence, answers: Sequence | None = None,
           stated: Sequence | None = None) -> list[str]:
    """Each record's budget as a slice: its name where the name stands for the limit it ran under
    (the name or its config's ``stated_tokens`` states it, or every record of that name ran at it,
    and no other such name shares it), else the number (``999 tokens``); an answer split is part
    of the slice. A name run at a limit other than the one its config states is its number."""
    answers = list(answers) if answers is not None else [None] * len(names)
    stated = list(stated) if stated is not None else [None] * len(names)
    names = [f"{int(limit)} tokens" if _known(said) and _known(limit) and int(said) != int(limit) else str(name)
             for name, limit, said in zip(names, tokens, stated)]
    values: dict[str, set] = {}
    for name, limit in zip(names, tokens):
        values.setdefault(str(name), set()).add(limit)
    def stands(name: str, limit) -> bool:  # noqa: E306
        said = tokens_of(name)
        return said == limit if said is not None else values[name] == {limit}
    named: dict = {}
    for name, limit in zip(names, tokens):
        if _known(limit) and name != f"{int(limit)} tokens" and stands(str(name), limit):
            named.setdefault(limit, set()).add(str(name))
    out = []
    for name, limit, answer in zip(names, tokens, answers):
        if not _known(limit):  # a source without the limit (a W&B table): its name
            label = str(name)
        else:
            limit = int(limit)
            label = next(iter(named[limit])) if len(named.get(limit, ())) == 1 else f"{limit} tokens"
        out.append(label + (f" (answer {int(answer)})" if answer is not None and answer == answer else ""))
    return out


def _known(value) -> bool:
    """A limit that is there: not None, not NaN (a table's missing cell)."""
    return value is not None and value == value


def slug(label: str) -> str:
    """A budget label as part of a file name or HTML id: no spaces or brackets (``999 tokens``:
    ``999tokens``), so report.md's image links and report.html's anchors resolve."""
    return re.sub(r"_+", "_", re.sub(r"[^\w.-]+", lambda m: "_" if "(" in m[0] else "", str(label))).strip("_")


def given(name: str, max_tokens: int) -> str:
    """How a refusal names the budget the user gave: ``20k``, or ``budget.max_tokens=300000``
    where the number overrides the one the name states."""
    stated = tokens_of(name)
    return str(name) if stated is None or stated == max_tokens else f"budget.max_tokens={max_tokens}"
