"""occurrence (TweetEval, App. A.3): a tweet is labelled by its count of standalone,
case-insensitive "the" — 1 → exactly_once, ≥ 2 → more_than_once, 0 → dropped."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources import hub
from mip.data.sources.rows import LoadResult, lines, one_line, require

if TYPE_CHECKING:
    from mip.config import TaskConfig

_THE = re.compile(r"\bthe\b", re.IGNORECASE)
_TWEETEVAL_STANCE = ("abortion", "atheism", "climate", "feminist", "hillary")


def the_count(text: str) -> int:
    """Standalone, case-insensitive "the" in ``text`` (the Occurrence ground truth)."""
    return len(_THE.findall(text))


def occurrence_label(text: str) -> tuple[str | None, str]:
    """exactly_once for one standalone "the" (any case), more_than_once for two or more."""
    count = the_count(text)
    if count == 0:
        return None, 'no standalone "the"'
    return ("exactly_once" if count == 1 else "more_than_once"), ""


def _expand_subsets(subsets: Iterable[str]) -> list[str]:
    out: list[str] = []
    for s in subsets:
        out += [f"stance/{t}" for t in _TWEETEVAL_STANCE] if s == "stance" else [s]
    return out


def load_tweeteval_the(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    """TweetEval tweets labelled by their count of "the".

    Reads ``source.subsets`` first. When those do not give ``pool_size/2`` tweets of
    each label (the local copy lacks ``sentiment/train_text.txt``), the
    ``source.fallback_subsets`` are pooled in too, and the result says so.
    """
    out = LoadResult()
    need = cfg.pool_size // 2
    primary = _expand_subsets(cfg.source.subsets)
    fallback = [s for s in _expand_subsets(cfg.source.fallback_subsets) if s not in primary]
    for subset in primary:
        _read_tweeteval_subset(cfg, data_dir, subset, out, required=True)
    counts = Counter(r.label for r in out.rows)
    short = {label: counts[label] for label in cfg.labels if counts[label] < need}
    if short and fallback:
        out.notes.append(
            f"subsets {primary} hold too few tweets per label for a pool of {cfg.pool_size} "
            f"({', '.join(f'{k}: {v}' for k, v in short.items())}); pooled in {fallback} as well"
        )
        for subset in fallback:
            _read_tweeteval_subset(cfg, data_dir, subset, out, required=False)
    return out


def _keep_tweet(out: LoadResult, id: str, text: str) -> None:
    text = one_line(text)
    out.keep(id, text, *occurrence_label(text), str(the_count(text)))


def _read_tweeteval_subset(cfg: TaskConfig, data_dir: Path | None, subset: str, out: LoadResult,
                           required: bool) -> None:
    if data_dir is None:
        out.source = f"hub:{cfg.source.hub_path}"
        for split in cfg.source.hub_splits:
            for i, row in enumerate(hub.rows(cfg.source.hub_path, subset.replace("stance/", "stance_"), split)):
                _keep_tweet(out, f"{subset}/{split}:{i}", row.get("text") or "")
        return
    out.source = "local"
    folder = data_dir / cfg.source.local_dir / subset
    expected = [folder / f"{split}_text.txt" for split in cfg.source.local_files]
    present = [f for f in expected if f.is_file()]
    if not present:
        if required:
            require(expected, f"occurrence (TweetEval {subset})")
        out.notes.append(f"no files for subset {subset}")
        return
    for f in expected:
        if f not in present:
            out.notes.append(f"missing file {f.relative_to(data_dir)} (left out)")
    for f in present:
        out.files.append(str(f))
        for i, line in enumerate(lines(f)):
            _keep_tweet(out, f"{subset}/{f.stem.removesuffix('_text')}:{i}", line)
