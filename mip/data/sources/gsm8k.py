"""math (GSM8K, App. A.1): the label is the parity of the final answer after ``####``
(commas stripped, negatives allowed); the final number is the instance-level truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources import hub
from mip.data.sources.rows import LoadResult, lines, require

if TYPE_CHECKING:
    from mip.config import TaskConfig


def gsm8k_final(answer: str) -> int | None:
    """The GSM8K final answer after ``####`` as an integer (commas stripped), or None."""
    if "####" not in answer:
        return None
    try:
        return int(answer.rsplit("####", 1)[1].strip().replace(",", ""))
    except ValueError:
        return None


def gsm8k_label(answer: str) -> tuple[str | None, str]:
    """Parity label of the GSM8K final answer after ``####`` (commas stripped)."""
    if "####" not in answer:
        return None, "no '####' final answer"
    value = gsm8k_final(answer)
    if value is None:
        return None, "final answer is not an integer"
    return ("even_number" if value % 2 == 0 else "odd_number"), ""


def _gsm8k_row(question: str, answer: str) -> tuple[str, str | None, str, str | None]:
    label, why = gsm8k_label(answer)
    value = gsm8k_final(answer)
    return question, label, why, (str(value) if value is not None else None)


def load_gsm8k(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    if data_dir is None:
        return hub.load(cfg, lambda row: _gsm8k_row(row.get("question") or "", row.get("answer") or ""))
    files = [data_dir / cfg.source.local_dir / f for f in cfg.source.local_files]
    require(files, "math (GSM8K)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    for f in files:
        for i, line in enumerate(lines(f)):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                question, answer = row["question"], row["answer"]
            except (json.JSONDecodeError, KeyError, TypeError):
                out.malformed()
                continue
            out.keep(f"{f.stem}:{i}", *_gsm8k_row(question, answer))
    return out
