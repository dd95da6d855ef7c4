"""One loader per source format, each applying its task's label rule (App. A, C.1).

A loader reads either the Hugging Face hub copy of a dataset or the source's native
files under ``data_dir`` (laid out as ``../shared/data/raw``) and returns every row it
read, labelled, with the rows it dropped counted by reason. Duplicates and texts that
carry two labels are handled afterwards, in one place (:mod:`mip.data.pools`).

The label rules:
- math (GSM8K): parity of the integer after ``####`` (commas stripped, negatives allowed)
- ner (WikiANN en): exactly one IOB2 entity span, of type PER or LOC
- occurrence (TweetEval): count of standalone case-insensitive "the"; 1 → exactly_once,
  ≥ 2 → more_than_once, 0 → dropped
- sentiment (SST-2): 0 → negative, 1 → positive
- wsd (CoarseWSD-20 java): class 0 ``java_java`` → place, class 1 → programming_language
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mip.config import TaskConfig


class DataError(RuntimeError):
    """A data source is missing, unreadable or unusable; the message says what to do."""


@dataclass
class Row:
    id: str
    text: str
    label: str
    target: str | None = None
    """The instance-level ground truth where it is more than the label (App. A): the GSM8K
    final number, the count of "the", an expression's value. None means the label."""


@dataclass
class LoadResult:
    rows: list[Row] = field(default_factory=list)
    read: int = 0
    dropped: Counter = field(default_factory=Counter)
    source: str = ""
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def keep(self, id: str, text: str, label: str | None, drop_reason: str = "", target: str | None = None) -> None:
        """Count one row read; keep it when it has a label, else count why it was dropped."""
        self.read += 1
        text = _one_line(text)
        if not text:
            self.dropped["empty text"] += 1
        elif label is None:
            self.dropped[drop_reason or "no label"] += 1
        else:
            self.rows.append(Row(id, text, label, target))


def _one_line(text: str | None) -> str:
    # An instance is one `Instance i: text` line of the prompt, so real line breaks
    # inside a text become spaces. Literal escape text such as `\n` or `\u2019` in
    # TweetEval is kept, as the paper keeps it.
    if not text:
        return ""
    return " ".join(text.replace("\r", "\n").split("\n")).strip()


# --------------------------------------------------------------------------- helpers


def _require(paths: Iterable[Path], what: str) -> None:
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise DataError(
            f"{what}: expected files are missing under the data folder: {', '.join(missing)}. "
            "Lay the source files out as in shared/data/raw (see its README), or drop data_dir=… to read the hub copy."
        )


def _hub_rows(path: str, name: str | None, split: str) -> Iterable[dict[str, Any]]:
    try:
        from datasets import load_dataset
    except ImportError as e:  # pragma: no cover - datasets is a base dependency
        raise DataError("Reading from the Hugging Face hub needs `pip install datasets`.") from e
    try:
        return load_dataset(path, name, split=split)
    except Exception as e:  # noqa: BLE001 - any hub failure gets the same advice
        raise DataError(
            f"Could not load {path}{'/' + name if name else ''} split {split!r} from the Hugging Face hub "
            f"({type(e).__name__}: {str(e)[:200]}). Without hub access, pass data_dir=<folder with the "
            "source files laid out as shared/data/raw>."
        ) from e


def _load_hub(cfg: TaskConfig, to_row: Callable[[dict[str, Any]], tuple]) -> LoadResult:
    """Every row of the hub copy's splits, as ``(text, label, drop reason[, target])`` by ``to_row``."""
    src = cfg.source
    out = LoadResult(source=f"hub:{src.hub_path}" + (f"/{src.hub_name}" if src.hub_name else ""))
    for split in src.hub_splits:
        for i, row in enumerate(_hub_rows(src.hub_path, src.hub_name, split)):
            out.keep(f"{split}:{i}", *to_row(row))
    return out


def _lines(path: Path) -> list[str]:
    # Decode leniently: a broken byte becomes U+FFFD and the row is still counted.
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


# --------------------------------------------------------------------------- math


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
        return _load_hub(cfg, lambda row: _gsm8k_row(row.get("question") or "", row.get("answer") or ""))
    files = [data_dir / cfg.source.local_dir / f for f in cfg.source.local_files]
    _require(files, "math (GSM8K)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    for f in files:
        for i, line in enumerate(_lines(f)):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                question, answer = row["question"], row["answer"]
            except (json.JSONDecodeError, KeyError, TypeError):
                out.read += 1
                out.dropped["malformed row"] += 1
                continue
            out.keep(f"{f.stem}:{i}", *_gsm8k_row(question, answer))
    return out


# --------------------------------------------------------------------------- ner

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
        return _load_hub(cfg, lambda row: (" ".join(row["tokens"]), *ner_label([WIKIANN_TAGS[t] for t in row["ner_tags"]])))
    files = [data_dir / cfg.source.local_dir / f for f in cfg.source.local_files]
    _require(files, "ner (WikiANN)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    for f in files:
        tokens: list[str] = []
        tags: list[str] = []
        index = 0
        for line in _lines(f) + [""]:
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


# --------------------------------------------------------------------------- occurrence

_THE = re.compile(r"\bthe\b", re.IGNORECASE)


def the_count(text: str) -> int:
    """Standalone, case-insensitive "the" in ``text`` (the Occurrence ground truth)."""
    return len(_THE.findall(text))


def occurrence_label(text: str) -> tuple[str | None, str]:
    """exactly_once for one standalone "the" (any case), more_than_once for two or more."""
    count = the_count(text)
    if count == 0:
        return None, 'no standalone "the"'
    return ("exactly_once" if count == 1 else "more_than_once"), ""


_TWEETEVAL_STANCE = ("abortion", "atheism", "climate", "feminist", "hillary")


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


def _read_tweeteval_subset(cfg: TaskConfig, data_dir: Path | None, subset: str, out: LoadResult, required: bool) -> None:
    if data_dir is None:
        out.source = f"hub:{cfg.source.hub_path}"
        for split in cfg.source.hub_splits:
            for i, row in enumerate(_hub_rows(cfg.source.hub_path, subset.replace("stance/", "stance_"), split)):
                text = _one_line(row.get("text") or "")
                out.keep(f"{subset}/{split}:{i}", text, *occurrence_label(text), str(the_count(text)))
        return
    out.source = "local"
    folder = data_dir / cfg.source.local_dir / subset
    expected = [folder / f"{split}_text.txt" for split in cfg.source.local_files]
    present = [f for f in expected if f.is_file()]
    if not present:
        if required:
            _require(expected, f"occurrence (TweetEval {subset})")
        out.notes.append(f"no files for subset {subset}")
        return
    for f in expected:
        if f not in present:
            out.notes.append(f"missing file {f.relative_to(data_dir)} (left out)")
    for f in present:
        out.files.append(str(f))
        for i, line in enumerate(_lines(f)):
            text = _one_line(line)
            out.keep(f"{subset}/{f.stem.removesuffix('_text')}:{i}", text, *occurrence_label(text), str(the_count(text)))


# --------------------------------------------------------------------------- sentiment

SST2_LABELS = {"0": "negative", "1": "positive"}


def load_sst2(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    if data_dir is None:
        return _load_hub(cfg, lambda row: (row.get("sentence") or "", SST2_LABELS.get(str(row.get("label"))), "label not 0/1"))
    files = [data_dir / cfg.source.local_dir / f for f in cfg.source.local_files]
    _require(files, "sentiment (SST-2)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    for f in files:
        lines = _lines(f)
        for i, line in enumerate(lines[1:] if lines and lines[0].startswith("sentence") else lines):
            sentence, sep, raw = line.rpartition("\t")
            if not sep:
                out.read += 1
                out.dropped["malformed row"] += 1
                continue
            out.keep(f"{f.stem}:{i}", sentence, SST2_LABELS.get(raw.strip()), "label not 0/1")
    return out


# --------------------------------------------------------------------------- wsd

WSD_SENSES = {"java_java": "place", "java_java_(programming_language)": "programming_language"}


def load_coarsewsd_java(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    if data_dir is None:
        raise DataError(
            "CoarseWSD-20 (the wsd task) has no canonical copy on the Hugging Face hub. Get the `java` folder of "
            "CoarseWSD-20 v1.0 (repository danlou/bert-disambiguation, data/CoarseWSD-20/java: classes_map.txt, "
            "{train,test}.data.txt, {train,test}.gold.txt) and pass data_dir=<folder holding wsd/java/>."
        )
    folder = data_dir / cfg.source.local_dir
    files = [folder / "classes_map.txt"]
    for split in cfg.source.local_files:
        files += [folder / f"{split}.data.txt", folder / f"{split}.gold.txt"]
    _require(files, "wsd (CoarseWSD-20 java)")
    out = LoadResult(source="local", files=[str(f) for f in files])
    classes = json.loads((folder / "classes_map.txt").read_text(encoding="utf-8"))
    senses = {k: WSD_SENSES.get(v) for k, v in classes.items()}
    for split in cfg.source.local_files:
        data = _lines(folder / f"{split}.data.txt")
        gold = _lines(folder / f"{split}.gold.txt")
        if len(data) != len(gold):
            out.notes.append(f"{split}: {len(data)} sentences but {len(gold)} gold labels; extra lines dropped")
        for i, line in enumerate(data):
            _, sep, sentence = line.partition("\t")
            label = senses.get(gold[i].strip()) if i < len(gold) else None
            out.keep(f"{split}:{i}", sentence if sep else "", label, "no gold sense")
    return out


# --------------------------------------------------------------------------- a user's table


#: The repository folder (the one holding conf/): a relative table path without data_dir is
#: read from here, so a run finds the same file whatever folder the shell is in.
REPO_ROOT = Path(__file__).resolve().parents[2]


def table_path(path: str, data_dir: Path | None) -> Path:
    """Where a task's ``source.path`` points: as given when absolute (``~`` expanded), else
    relative to ``data_dir`` when one is set, else relative to the repository folder."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (Path(data_dir).expanduser() if data_dir is not None else REPO_ROOT) / p


def load_table(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    """A user's own CSV / JSONL / Parquet file with a text and a label column."""
    from mip.data.tables import read_table

    src = cfg.source
    if not src.path:
        raise DataError(f"Task {cfg.name!r} uses the table loader: set source.path to a .csv, .jsonl or .parquet file.")
    path = table_path(src.path, data_dir)
    if not path.is_file():
        where = "data_dir" if data_dir is not None else f"the repository folder {REPO_ROOT} (no data_dir set)"
        raise DataError(f"Task {cfg.name!r}: the table {path} does not exist; a relative source.path is read from "
                        f"{where}. Give an absolute path or set data_dir.")
    frame = read_table(path)
    for col in (src.text_column, src.label_column):
        if col not in frame.columns:
            raise DataError(f"Task {cfg.name!r}: {path.name} has no column {col!r}; its columns are {list(frame.columns)}.")
    mapping = {str(k): v for k, v in src.label_map.items()} or {label: label for label in cfg.labels}
    out = LoadResult(source="local", files=[str(path)])
    for i, (text, raw) in enumerate(zip(frame[src.text_column], frame[src.label_column])):
        label = mapping.get(str(raw).strip()) if raw == raw else None  # NaN != NaN
        out.keep(f"{path.stem}:{i}", "" if text != text else str(text), label, "label not among the task's labels")
    return out


# --------------------------------------------------------------------------- synthetic

_OPS = ("+", "-", "*")


def arithmetic_instance(rng: random.Random) -> tuple[str, int]:
    """One expression of two or three operands, and its value (standard precedence)."""
    operands = [rng.randint(2, 99) for _ in range(rng.choice((2, 3)))]
    ops = [rng.choice(_OPS) for _ in operands[1:]]
    expr = " ".join(str(x) for pair in zip(operands, ops + [""]) for x in pair).strip()
    value = eval(expr, {"__builtins__": {}})  # noqa: S307 - digits and + - * only, built just above
    return expr.replace("*", "×"), value


def load_synthetic_arith(cfg: TaskConfig, data_dir: Path | None) -> LoadResult:
    """Arithmetic expressions generated from ``pool_seed``; the label is the parity of the value."""
    rng = random.Random(cfg.pool_seed)
    out = LoadResult(source=f"synthetic:arith(seed={cfg.pool_seed})")
    even, odd = cfg.labels
    for i in range(cfg.source.size or 4 * cfg.pool_size):
        expr, value = arithmetic_instance(rng)
        out.keep(f"arith:{i}", f"What is {expr}?", even if value % 2 == 0 else odd, target=str(value))
    return out


LOADERS: dict[str, Callable[[Any, Path | None], LoadResult]] = {
    "gsm8k": load_gsm8k,
    "wikiann": load_wikiann,
    "tweeteval_the": load_tweeteval_the,
    "sst2": load_sst2,
    "coarsewsd_java": load_coarsewsd_java,
    "table": load_table,
    "synthetic_arith": load_synthetic_arith,
}
