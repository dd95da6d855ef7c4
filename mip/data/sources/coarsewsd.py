"""wsd (CoarseWSD-20 java, App. A.5): class 0 ``java_java`` → place, class 1 →
programming_language. There is no canonical hub copy: the native files only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mip.data.sources.rows import DataError, LoadResult, lines, require

if TYPE_CHECKING:
    from mip.config import TaskConfig

WSD_SENSES = {"java_java": "place", "java_java_(programming_language)": "programming_language"}


#: Where CoarseWSD-20's files come from: it has no copy on the Hugging Face hub.
WHERE = ("get the `java` folder of CoarseWSD-20 v1.0 (repository danlou/bert-disambiguation, data/CoarseWSD-20/java: "
         "classes_map.txt, {train,test}.data.txt, {train,test}.gold.txt)")


def load_coarsewsd_java(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    if data_dir is None:
        raise DataError(f"CoarseWSD-20 (the wsd task) has no canonical copy on the Hugging Face hub: {WHERE} "
                        "and pass data_dir=<folder holding wsd/java/>.")
    folder = data_dir / cfg.source.local_dir
    files = [folder / "classes_map.txt"]
    for split in cfg.source.local_files:
        files += [folder / f"{split}.data.txt", folder / f"{split}.gold.txt"]
    require(files, "wsd (CoarseWSD-20 java)", f"or {WHERE}: it has no copy on the Hugging Face hub")
    out = LoadResult(source="local", files=[str(f) for f in files])
    classes = json.loads((folder / "classes_map.txt").read_text(encoding="utf-8"))
    senses = {k: WSD_SENSES.get(v) for k, v in classes.items()}
    for split in cfg.source.local_files:
        data = lines(folder / f"{split}.data.txt")
        gold = lines(folder / f"{split}.gold.txt")
        if len(data) != len(gold):
            out.notes.append(f"{split}: {len(data)} sentences but {len(gold)} gold labels; extra lines dropped")
        for i, line in enumerate(data):
            _, sep, sentence = line.partition("\t")
            label = senses.get(gold[i].strip()) if i < len(gold) else None
            out.keep(f"{split}:{i}", sentence if sep else "", label, "no gold sense")
    return out
