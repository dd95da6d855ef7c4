"""The search across records of report.html: ``search.html`` finds records by answer, verdict and
trace text (and by model, task, pattern, key), offline and from disk.

A browser opening a file gives a page no way to read a JSON file beside it, so the index is
JavaScript: ``search/<key[:2]>.js`` (a shard: the records whose key starts so, each one short row)
and ``search/shards.js`` (the shards and their sizes), loaded as ``<script>`` tags one after the
other while the page already searches what has arrived. A row holds a record's fields, its answer,
the first :data:`TRACE_CHARS` characters of its trace and :data:`OUTPUT_CHARS` of its output (the
record's page searches the whole trace), and the link to its page.

A shard is written only when its rows changed (``search/.index.json`` keeps each shard's digest),
so a rerun after one more job writes the shards of that job's keys alone.

>>> rows = rows_of(pd.DataFrame({"key": ["ab12"], "model": ["m"], "task": ["t"], "pattern": ["random"], "seed": [0],
...                              "verdict": ["correct"], "answer": ["x"], "reasoning": ["Instance 1: x."],
...                              "output": [None]}).set_index("key"), {"ab12": "records/ab/ab12.html"})
>>> rows["ab"][0][:8]
['ab12', 'records/ab/ab12.html', 'm', 't', 'random', '0', 'correct', 'x']

Exercised by ``pytest tests/test_report_search.py``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd

#: Characters of a trace, and of an output, a record's row holds (a record page searches the whole of them).
TRACE_CHARS = 2_000
OUTPUT_CHARS = 500
#: A row's fields, in order (``search.js`` reads them by these positions).
FIELDS = ("key", "href", "model", "task", "pattern", "seed", "verdict", "answer", "n", "p", "budget",
          "prompt_variant", "trace", "output", "trace_chars", "output_chars")
_TEXT = FIELDS[2:12]  # the record's fields and answer, as text
ASSET, PAGE = (Path(__file__).parent / "templates" / name for name in ("search.js", "search.html"))


def _plain(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def rows_of(info: pd.DataFrame, written: dict[str, str]) -> dict[str, list[list]]:
    """The index rows of the records of ``info`` (indexed by key), by shard (the key's first two characters)."""
    frame = info.reset_index()
    columns = {c: frame[c].tolist() if c in frame else [None] * len(frame) for c in ("key", *_TEXT, "reasoning",
                                                                                    "output")}
    shards: dict[str, list[list]] = {}
    for i, key in enumerate(columns["key"]):
        trace, output = columns["reasoning"][i] or "", columns["output"][i] or ""
        trace = trace if isinstance(trace, str) else ""
        output = output if isinstance(output, str) else ""
        row = [key, written.get(key), *(_plain(columns[c][i]) for c in _TEXT),
               trace[:TRACE_CHARS], output[:OUTPUT_CHARS], len(trace), len(output)]
        shards.setdefault(_shard(key), []).append(row)
    return shards


def _shard(key: str) -> str:
    name = "".join(c for c in key[:2].lower() if c.isalnum())
    return name or "_"


def write(folder: Path, info: pd.DataFrame, written: dict[str, str]) -> int:
    """``search.html``'s index under ``folder/search`` and its script in ``folder/assets``; return the
    number of shards written (the others are kept from the last report, their rows unchanged)."""
    out = folder / "search"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ASSET, folder / "assets" / ASSET.name)
    shutil.copyfile(PAGE, folder / PAGE.name)
    index = out / ".index.json"
    rules = hashlib.blake2b(Path(__file__).read_bytes() + ASSET.read_bytes(), digest_size=10).hexdigest()
    try:
        old = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    kept = old.get("shards", {}) if old.get("rules") == rules else {}
    index.unlink(missing_ok=True)  # a kill from here on leaves shards the index does not vouch for
    shards, digests, count = rows_of(info, written), {}, 0
    for name, rows in sorted(shards.items()):
        text = f"mipSearch.add({json.dumps(rows, ensure_ascii=False, separators=(',', ':'))});\n"
        digests[name] = digest = hashlib.blake2b(text.encode(), digest_size=10).hexdigest()
        if kept.get(name) == digest and (out / f"{name}.js").is_file():
            continue
        _replace(out / f"{name}.js", text)
        count += 1
    for gone in set(kept) - set(shards):
        (out / f"{gone}.js").unlink(missing_ok=True)
    listing = [[name, len(rows)] for name, rows in sorted(shards.items())]
    _replace(out / "shards.js", f"mipSearch.shards({json.dumps(listing)}, {json.dumps(list(FIELDS))}, "
                                f"{TRACE_CHARS}, {OUTPUT_CHARS});\n")
    _replace(index, json.dumps({"rules": rules, "shards": digests}))
    return count


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole, as a new file (a file kept from the last report is a link to it: left as it was)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
