"""One loader per source format, each applying its task's label rule (App. A, C.1).

A loader reads either the Hugging Face hub copy of a dataset (:mod:`.hub`) or the source's
native files under ``data_dir`` (laid out as ``../shared/data/raw``) and returns every row
it read, labelled, with the rows it dropped counted by reason (:class:`LoadResult`).
Duplicates and texts that carry two labels are handled afterwards, in one place
(:mod:`mip.data.pools`).

The label rules, one module each:
- math (GSM8K, :mod:`.gsm8k`): parity of the integer after ``####`` (commas stripped,
  negatives allowed)
- ner (WikiANN en, :mod:`.wikiann`): exactly one IOB2 entity span, of type PER or LOC
- occurrence (TweetEval, :mod:`.tweeteval`): count of standalone case-insensitive "the";
  1 → exactly_once, ≥ 2 → more_than_once, 0 → dropped
- sentiment (SST-2, :mod:`.sst2`): 0 → negative, 1 → positive
- wsd (CoarseWSD-20 java, :mod:`.coarsewsd`): class 0 ``java_java`` → place, class 1 →
  programming_language
- a user's own CSV / JSONL / Parquet table (:mod:`.table`), and the synthetic arithmetic
  task that needs no download (:mod:`.synthetic`).

>>> LOADERS["sst2"](task_cfg, Path("../shared/data/raw")).rows[0]     # doctest: +SKIP

Exercised by ``pytest tests/test_data.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mip.data.sources.coarsewsd import WSD_SENSES, load_coarsewsd_java
from mip.data.sources.gsm8k import gsm8k_final, gsm8k_label, load_gsm8k
from mip.data.sources.rows import DataError, LoadResult, Row
from mip.data.sources.sst2 import SST2_LABELS, load_sst2
from mip.data.sources.synthetic import arithmetic_instance, load_synthetic_arith
from mip.data.sources.local_table import REPO_ROOT, load_table, table_path
from mip.data.sources.tweeteval import load_tweeteval_the, occurrence_label, the_count
from mip.data.sources.wikiann import WIKIANN_TAGS, load_wikiann, ner_label

#: ``source.loader`` names (conf/task/*.yaml) and their loaders.
LOADERS: dict[str, Callable[[Any, Path | None], LoadResult]] = {
    "gsm8k": load_gsm8k,
    "wikiann": load_wikiann,
    "tweeteval_the": load_tweeteval_the,
    "sst2": load_sst2,
    "coarsewsd_java": load_coarsewsd_java,
    "table": load_table,
    "synthetic_arith": load_synthetic_arith,
}

# Loaders of sources with no copy on the hub: without data_dir they refuse at once (their
# DataError says what to get), so a job checks them before it reads any other source.
LOCAL_ONLY = {"coarsewsd_java"}

__all__ = ["LOADERS", "LOCAL_ONLY", "DataError", "LoadResult", "Row", "REPO_ROOT", "SST2_LABELS", "WIKIANN_TAGS",
           "WSD_SENSES",
           "arithmetic_instance", "gsm8k_final", "gsm8k_label", "ner_label", "occurrence_label",
           "table_path", "the_count"]
