"""mip.data.sources.tables.read_table: every format it reads, and a one-line DataError for each way a file can be wrong."""

from __future__ import annotations

import pandas as pd
import pytest

from mip.data import DataError
from mip.data.sources.tables import READERS, read_table

FRAME = pd.DataFrame({"text": ["a good film", "a dull film", "so-so, really"], "label": ["pos", "neg", "neg"]})


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".json", ".parquet", ".CSV"])
def test_each_format_reads_back_the_same_rows(tmp_path, suffix):
    path = tmp_path / f"reviews{suffix}"
    write = {".csv": lambda: FRAME.to_csv(path, index=False), ".tsv": lambda: FRAME.to_csv(path, sep="\t", index=False),
             ".jsonl": lambda: FRAME.to_json(path, orient="records", lines=True),
             ".json": lambda: FRAME.to_json(path, orient="records"), ".parquet": lambda: FRAME.to_parquet(path),
             ".CSV": lambda: FRAME.to_csv(path, index=False)}
    write[suffix]()
    pd.testing.assert_frame_equal(read_table(path), FRAME)
    assert suffix.lower() in READERS


def test_a_home_relative_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    FRAME.to_csv(tmp_path / "t.csv", index=False)
    assert len(read_table("~/t.csv")) == 3


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text and len(text) < 400
    return text


@pytest.mark.parametrize("case,name,content,message", [
    ("missing", "nope.csv", None, "does not exist"),
    ("a folder", "folder.csv", "dir", "does not exist"),
    ("empty", "t.csv", "", "is empty: give a file with a header row"),
    ("header only", "t.csv", "text,label\n", "is empty: it has no rows"),
    ("unsupported", "t.xlsx", "x", "Cannot read t.xlsx: save the table as one of .csv, .tsv, .jsonl, .json, .parquet"),
    ("ragged csv", "t.csv", "text,label\na,b\nc,d,e,f\n", "could not be read as .csv (Error tokenizing data."),
    ("broken jsonl", "t.jsonl", '{"text": "a", "label": "b"}\n{"text": \n', "could not be read as .jsonl"),
    ("not parquet", "t.parquet", "text,label\na,b\n", "could not be read as .parquet"),
    ("not utf-8", "t.csv", b"text,label\n\xff\xfe\xfa,b\n", "could not be read as .csv"),
])
def test_a_bad_file_is_a_one_line_error(tmp_path, case, name, content, message):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(DataError) as error:
        read_table(path)
    assert message in one_line(error) and name in str(error.value)


def test_the_table_loader_reads_through_the_same_reader(tmp_path, monkeypatch):
    """sources.load_table has no reader of its own: its refusals are read_table's."""
    from mip.config import SourceConfig, TaskConfig
    from mip.data.sources import load_table

    path = tmp_path / "t.tsv"
    FRAME.to_csv(path, sep="\t", index=False)
    task = TaskConfig(name="t", labels=["neg", "pos"], source=SourceConfig(loader="table", path=str(path)))
    assert [row.label for row in load_table(task, None).rows] == ["pos", "neg", "neg"]
    calls = []
    monkeypatch.setattr("mip.data.sources.tables.read_table", lambda p: calls.append(p) or FRAME)
    load_table(task, None)
    assert calls == [path]
    path.write_text("")
    monkeypatch.undo()
    with pytest.raises(DataError, match="is empty"):
        load_table(task, None)
