"""ner (WikiANN en, App. A.2): a sentence whose IOB2 tags hold exactly one entity span,
of type PER or LOC, is labelled with that type."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources import hub
from mip.data.sources.rows import LoadResult, lines, require

if TYPE_CHECKING:
    from mip.config import TaskConfig

#: WikiANN's integer tags on the hub.
WIKIANN_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")


def ner_label(tags: list[str]) -> tuple[str | None, str]:
    """PER or LOC when the IOB2 tags hold exactly one entity span of that type."""
    spans: list[str] = []
    previous = "O"
    for tag in tags:
        if tag.startswith("B-") or (tag.startswith("I-") and previous[2:] != tag[2:]):
            spans.append(tag[2:])
        previous = tag
    if len(spans) != 1:
        return None, "not exactly one entity"
    if spans[0] not in ("PER", "LOC"):
        return None, f"single {spans[0]} entity"
    return spans[0], ""


def load_wikiann(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    if data_dir is None:
        return hub.load(cfg, lambda row: (" ".join(row["tokens"]),
                                          *ner_label([WIKIANN_TAGS[t] for t in row["ner_tags"]])))
    files = [data_dir / cfg.source.local_dir / f for f in cfg.source.local_files]
    require(files, "ner (WikiANN)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    for f in files:
        tokens: list[str] = []
        tags: list[str] = []
        index = 0
        for line in lines(f) + [""]:
            if line.strip():
                parts = line.split("\t")
                tokens.append(parts[0])
                tags.append(parts[1].strip() if len(parts) > 1 else "O")
                continue
            if tokens:
                label, why = ner_label(tags)
                out.keep(f"{f.stem}:{index}", " ".join(tokens), label, why)
                index += 1
                tokens, tags = [], []
    return out
