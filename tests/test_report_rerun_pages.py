"""report.html's list and record pages on a rerun: kept where what they show is unchanged, written
again where it changed, and the report always the one a fresh analysis of the same store writes."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest

from mip.analysis.report import list_pages, record_pages

from .test_report_scale import _analyze, _job, _store


def _pages(report: Path) -> dict[str, bytes]:
    """The list and record pages of a report (and their long texts), by path; hidden indexes left out."""
    return {p.relative_to(report).as_posix(): p.read_bytes() for folder in ("lists", "records")
            for p in sorted((report / folder).rglob("*")) if p.is_file() and not p.name.startswith(".")}


@pytest.fixture
def rendered(monkeypatch) -> list[str]:
    """The name of every template rendered, in order."""
    names: list[str] = []
    render = jinja2.Template.render

    def counting(self, *args, **kwargs):
        names.append(self.name)
        return render(self, *args, **kwargs)

    monkeypatch.setattr(jinja2.Template, "render", counting)
    return names


def _same_as_fresh(store: Path, report: Path, fresh: Path, results: Path) -> None:
    """The report in ``report`` is the one a fresh analysis into an empty folder writes: report.md byte
    for byte, every list and record page byte for byte (none more, none fewer)."""
    _analyze(store, fresh, f"paths.results_dir={results}")
    assert (report / "report.md").read_bytes() == (fresh / "report.md").read_bytes()
    again, anew = _pages(report), _pages(fresh)
    assert sorted(again) == sorted(anew)
    assert [name for name in again if again[name] != anew[name]] == []


def test_a_rerun_after_one_more_job_is_the_report_a_fresh_analysis_writes(tmp_path, rendered):
    """After one more job (one more pattern, and one more (n, p) cell), the rerun keeps the lists and
    record pages that did not change, writes the rest, and equals a fresh analysis of the same store."""
    results, out = tmp_path / "results", tmp_path / "out"
    store = _store(results, patterns=("majority_first", "majority_last"))
    report = _analyze(store, out, f"paths.results_dir={results}")
    first = len(list((report / "lists").glob("*.html")))
    _store(results, patterns=("majority_edges",))
    _job(results, 10, "majority_first")
    rendered.clear()
    _analyze(store, out, f"paths.results_dir={results}")
    lists = rendered.count("list.html.j2")
    assert 0 < lists < len(list((report / "lists").glob("*.html"))), (lists, first)  # some kept, some written
    assert rendered.count("record.html.j2") == 4  # the two jobs' records: two majority labels each
    _same_as_fresh(store, report, tmp_path / "fresh", results)


def test_a_rerun_of_an_unchanged_store_renders_no_list_and_no_record_page(tmp_path, rendered):
    results, out = tmp_path / "results", tmp_path / "out"
    store = _store(results, patterns=("majority_first", "majority_last"))
    report = _analyze(store, out, f"paths.results_dir={results}")
    assert rendered.count("list.html.j2") == len(list((report / "lists").glob("*.html"))) > 0
    before = _pages(report)
    rendered.clear()
    _analyze(store, out, f"paths.results_dir={results}")
    assert rendered.count("list.html.j2") == rendered.count("record.html.j2") == 0, rendered
    assert _pages(report) == before


def _change_verdict(store: Path) -> str:
    """One stored record's verdict changed in place (same key), as an edited or re-scored store would hold it;
    return its key."""
    for path in sorted(store.rglob("*.json*")):
        if path.name.startswith(".") or path.name == "job.json":
            continue
        text = path.read_text(encoding="utf-8")
        for old, new in (('"verdict":"correct"', '"verdict":"invalid"'), ('"verdict":"invalid"', '"verdict":"correct"')):
            line = next((row for row in text.splitlines() if old in row), None)
            if line is not None:  # the record's verdict, the last of its line; its attempts' keep theirs
                at = line.rindex(old)
                path.write_text(text.replace(line, line[:at] + new + line[at + len(old):]), encoding="utf-8")
                return json.loads(line)["key"]
    raise AssertionError(f"no record with a verdict found under {store}")


def test_a_changed_record_rewrites_its_page_and_the_lists_that_hold_it(tmp_path, rendered, monkeypatch):
    results, out = tmp_path / "results", tmp_path / "out"
    store = _store(results, patterns=("majority_first", "majority_last"))
    report = _analyze(store, out, f"paths.results_dir={results}")
    key = _change_verdict(store)
    views: list[str] = []
    view_of = record_pages.view_of
    monkeypatch.setattr(record_pages, "view_of", lambda record, *a: views.append(record.key) or view_of(record, *a))
    written: list[str] = []
    write = list_pages.KeptLists.write
    monkeypatch.setattr(list_pages.KeptLists, "write", lambda self, name, page: written.append(name)
                        or write(self, name, page))
    _analyze(store, out, f"paths.results_dir={results}")
    assert views == [key]
    holding = {p.name for p in (report / "lists").glob("*.html") if key in p.read_text(encoding="utf-8")}
    assert holding and holding <= set(written), (holding, written)  # every list that holds it is new
    assert len(written) < len(list((report / "lists").glob("*.html")))  # and the others are kept
    _same_as_fresh(store, report, tmp_path / "fresh", results)


def test_a_rerun_reads_only_the_record_files_that_changed(tmp_path, monkeypatch):
    """Record pages are kept without reading their records again: after one more job, the record pages
    read that job's packs alone (the rest are known by their identity: inode, size, time stamp)."""
    results, out = tmp_path / "results", tmp_path / "out"
    store = _store(results, patterns=("majority_first", "majority_last"))
    _analyze(store, out, f"paths.results_dir={results}")
    before = {p for p in store.rglob("*.json*")}
    _store(results, patterns=("majority_edges",))
    new = {p for p in store.rglob("*.json*")} - before
    read: list[Path] = []
    iter_records = record_pages.iter_records
    monkeypatch.setattr(record_pages, "iter_records", lambda paths, *a, **k: read.extend(paths) or
                        iter_records(paths, *a, **k))
    _analyze(store, out, f"paths.results_dir={results}")
    assert new and set(read) == new, (read, new)


def test_a_line_the_quarantine_skips_gives_way_to_its_record_asked_again(tmp_path):
    """A pack's line moved aside after the last report (the pack itself untouched: its inode, size and
    time stamp the same) and its experiment asked again into a later pack (another verdict): the rerun
    shows the new record, as a fresh analysis does, not the page of the line moved aside."""
    from mip.store.packs import scan
    from mip.store.quarantine import quarantine_line

    results, out = tmp_path / "results", tmp_path / "out"
    store = _store(results, patterns=("majority_first", "majority_last"))
    report = _analyze(store, out, f"paths.results_dir={results}")
    pack = sorted(store.rglob("pack-*.jsonl"))[0]
    key, line = scan(pack)[0][0]
    stamp = pack.stat()
    quarantine_line(store, line, "a test moves it aside", line.read())
    record = json.loads(line.read())
    record["verdict"] = "invalid" if record["verdict"] == "correct" else "correct"
    (pack.parent / pack.name.replace("pack-", "pack-9", 1)).write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert (pack.stat().st_ino, pack.stat().st_size, pack.stat().st_mtime_ns) == (stamp.st_ino, stamp.st_size,
                                                                                  stamp.st_mtime_ns)
    page = report / "records" / key[:2] / f"{key}.html"
    before = page.read_bytes()
    _analyze(store, out, f"paths.results_dir={results}")
    assert page.read_bytes() != before
    _same_as_fresh(store, report, tmp_path / "fresh", results)
