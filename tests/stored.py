"""A store's records read the way a person would, without mip's store code: every line of
every ``pack-*.jsonl`` (those the quarantine log lists left out; a torn last line has no
newline and is no record) and every ``<key>.json`` file of a store written before packs.
Tests read and damage stores with these, so they hold whatever the store's code looks like."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Stored:
    """One stored record as it lies on disk: a pack's line, or a record file."""

    path: Path
    offset: int | None  # None: a file of its own
    data: bytes

    @property
    def key(self) -> str:
        return json.loads(self.data)["key"]

    def json(self) -> dict:
        return json.loads(self.data)

    def overwrite(self, data: bytes) -> None:
        """Damage it in place: a pack's line keeps its length (padded with spaces, cut to fit),
        so every other line stays where it was; a file is replaced."""
        if self.offset is None:
            self.path.write_bytes(data)
            return
        with open(self.path, "r+b") as f:
            f.seek(self.offset)
            f.write(data[: len(self.data)].ljust(len(self.data)))


def _moved_aside(store: Path) -> set[tuple[str, int]]:
    log = store / ".quarantine" / "log.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    return {(e["file"], e["line_at"]) for e in entries if "line_at" in e}


def _store_of(path: Path) -> Path:
    return path.parents[2]  # <store>/<model>/<task>/<file>


def entries(folder: Path) -> list[Stored]:
    """Every record under ``folder`` (a store or a part of one), packs' lines in order."""
    found = []
    for path in sorted(p for p in Path(folder).rglob("*.json*") if not any(x.startswith(".") for x in
                                                                          p.relative_to(folder).parts)):
        if path.name.startswith("pack-") and path.suffix == ".jsonl":
            skip = _moved_aside(_store_of(path))
            data, start = path.read_bytes(), 0
            while (end := data.find(b"\n", start)) != -1:
                if (str(path.relative_to(_store_of(path))), start) not in skip:
                    found.append(Stored(path, start, data[start:end]))
                start = end + 1
        elif path.suffix == ".json" and path.name != "job.json":
            found.append(Stored(path, None, path.read_bytes()))
    return found


def records(folder: Path) -> list[dict]:
    """The records under ``folder`` as JSON, sorted by key."""
    return sorted((e.json() for e in entries(folder)), key=lambda r: r["key"]) if Path(folder).is_dir() else []


def keys(folder: Path) -> set[str]:
    return {e.key for e in entries(folder)} if Path(folder).is_dir() else set()
