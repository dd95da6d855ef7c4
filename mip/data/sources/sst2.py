"""sentiment (SST-2, App. A.4): label 0 → negative, 1 → positive."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources import hub
from mip.data.sources.rows import LoadResult, lines, require

if TYPE_CHECKING:
    from mip.config import TaskConfig

SST2_LABELS = {"0": "negative", "1": "positive"}


def load_sst2(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    if data_dir is None:
        return hub.load(cfg, lambda row: (row.get("sentence") or "", SST2_LABELS.get(str(row.get("label"))),
                                          "label not 0/1"))
    files = [data_dir / cfg.source.local_dir / f for f in cfg.source.local_files]
    require(files, "sentiment (SST-2)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    for f in files:
        rows = lines(f)
        for i, line in enumerate(rows[1:] if rows and rows[0].startswith("sentence") else rows):
            sentence, sep, raw = line.rpartition("\t")
            if not sep:
                out.malformed()
                continue
            out.keep(f"{f.stem}:{i}", sentence, SST2_LABELS.get(raw.strip()), "label not 0/1")
    return out
