"""What makes report.html cheap to write again and easy to follow while it is written: record pages
kept from one report to the next (:class:`Pages`), and progress lines (:class:`Said`).

A record page is written again only when its record changed (its fingerprint,
:func:`mip.analysis.report.record_pages.fingerprint`) or the report's rules did (the page's code,
templates and the coverage rule); ``records/.index.json`` keeps each page's fingerprint (hidden: no
reader of a folder takes it for a record), and the records each record file or pack held with their
fingerprints, so a file unchanged since (:func:`mip.analysis.report.record_pages.identity`) is not read
again. List pages are kept so too (:class:`KeptLists`, ``lists/.index.json``).

Exercised by ``pytest tests/test_report_scale.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import orjson

from mip.analysis import coverage
from mip.analysis.report import record_pages


class Pages:
    """The record pages under ``records/``, kept from one report to the next: a page is written again
    only when its record or the report's rules (the writer's code and templates, the record page's
    code, the coverage rule) changed; ``records/.index.json`` keeps each page's record fingerprint
    (hidden: no reader of a folder takes it for a record)."""

    def __init__(self, folder: Path, makers: list[Path], keep: bool = True):
        self.folder, self.index = folder, folder / ".index.json"
        self.rules = _rules(makers)
        try:
            old = orjson.loads(self.index.read_bytes()) if keep else {}
        except (OSError, ValueError):
            old = {}
        if old.get("rules") != self.rules:
            shutil.rmtree(folder, ignore_errors=True)
            old = {}
        self.old: dict[str, str] = old.get("pages", {})
        self.new: dict[str, str] = {}
        self.files: dict[str, list] = old.get("files", {})
        """Per record file or pack read: its identity and the records it held, as last read."""
        self.read: dict[str, list] = {}
        self.there = {f"{entry.name[:-5]}" for part in (os.scandir(folder) if folder.is_dir() else [])
                      if part.is_dir() for entry in os.scandir(part.path) if entry.name.endswith(".html")}
        """The keys whose pages are there (listed once, not one look a page)."""
        if self.index.exists():  # a kill from here on leaves pages the index does not vouch for: none are kept
            self.index.unlink()

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.html"

    def kept(self, key: str, fp: str) -> bool:
        """Whether the page of ``key`` is the last report's and its record's fingerprint is still ``fp``."""
        self.new[key] = fp
        return self.old.get(key) == fp and key in self.there

    def held(self, name: str, identity: list) -> list[list[str]] | None:
        """The records (model, task, key, fingerprint) the file ``name`` held when the last report read
        it, if its ``identity`` (:func:`mip.analysis.report.record_pages.identity`) is the same now."""
        old = self.files.get(name)
        if old is None or old[0] != identity:
            return None
        self.read[name] = old
        return old[1]

    def holds(self, name: str, identity: list, records: list[list[str]]) -> None:
        """The file ``name`` was read: its identity and the records it holds, for the next report."""
        self.read[name] = [identity, records]

    def close(self, written: set[str]) -> None:
        """Remove the pages of records no longer in the report; keep the index of those written."""
        for key in set(self.old) - written:
            self.path(key).unlink(missing_ok=True)
            for whole in self.path(key).parent.glob(f"{key}.*.txt"):  # its long texts, kept whole
                whole.unlink()
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.index.with_suffix(".tmp")
        pages = {k: v for k, v in self.new.items() if k in written}
        tmp.write_bytes(orjson.dumps({"rules": self.rules, "pages": pages, "files": self.read}))
        os.replace(tmp, self.index)


class KeptLists:
    """The list pages under ``lists/``, kept from one report to the next: a list is written again only
    when what it shows changed (its digest, :func:`mip.analysis.report.list_pages.digest`: its name,
    title and value, its experiments' keys and their rows' shown fields) or the report's rules did;
    ``lists/.index.json`` keeps each page's digest (hidden). A kept page is the last report's file
    (a link, :mod:`mip.analysis.report.swap`): a changed one is written as a new file, never over it."""

    def __init__(self, folder: Path, makers: list[Path]):
        self.folder, self.index = folder, folder / ".index.json"
        self.rules = _rules(makers)
        try:
            old = json.loads(self.index.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        self.old: dict[str, str] = old.get("pages", {}) if old.get("rules") == self.rules else {}
        self.new: dict[str, str] = {}
        self.written = 0
        self.index.unlink(missing_ok=True)  # a kill from here on leaves lists the index does not vouch for

    def kept(self, name: str, digest: str) -> bool:
        """Whether the page ``name`` showing what ``digest`` digests is the last report's, unchanged."""
        self.new[name] = digest
        return self.old.get(name) == digest and (self.folder / name).is_file()

    def write(self, name: str, page: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{name}.tmp"
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, self.folder / name)
        self.written += 1

    def close(self) -> None:
        """Remove the lists of cells no longer in the report; keep the index of those there are."""
        if self.folder.is_dir():
            for path in self.folder.iterdir():
                if path.name not in self.new and path != self.index:
                    path.unlink()
        if not self.new:
            return
        tmp = self.index.with_suffix(".tmp")
        tmp.write_text(json.dumps({"rules": self.rules, "pages": self.new}), encoding="utf-8")
        os.replace(tmp, self.index)


def _rules(makers: list[Path]) -> str:
    """A digest of what a record page's look is made by: ``makers`` (the writer's code and templates),
    the record page's code and the coverage rule."""
    digest = hashlib.blake2b(digest_size=10)
    for path in sorted([*makers, Path(record_pages.__file__), Path(coverage.__file__)]):
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Said:
    """Progress of a long step as lines on stderr: one at least every ``every`` seconds, with done/total and ETA.

    >>> said = Said("record pages", 10, every=0.0, out=sys.stdout)
    >>> said.update(5)  # doctest: +ELLIPSIS
    report.html: record pages 5/10 (..., ETA ...)
    """

    def __init__(self, what: str, total: int, every: float = 10.0, out=None):
        self.what, self.total, self.every, self.out = what, total, every, out
        self.start = self.last = time.monotonic()
        self.done = 0

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            spent = now - self.start
            eta = (self.total - self.done) * spent / self.done if self.done else float("nan")
            print(f"report.html: {self.what} {self.done}/{self.total} ({spent:.0f} s, ETA {eta:.0f} s)",
                  file=self.out or sys.stderr, flush=True)
