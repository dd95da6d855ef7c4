"""Docs name only what exists: every dotted `mip.…` name README.md and
docs/*.md show resolves to a module, class, function or attribute of this checkout, and no file
of the project cites the developers' notes kept outside the repository."""

from __future__ import annotations

import importlib
import re
import subprocess

import pytest

from .conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NAME = re.compile(r"(?<![\w/.-])mip(?:\.[A-Za-z_]\w*)+")
SHOWN = sorted({(page.relative_to(REPO).as_posix(), m.group(0)) for page in PAGES for m in NAME.finditer(page.read_text())})


def resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute reached from the longest module it starts with."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


def test_the_pages_name_many_parts_of_mip():
    assert len(SHOWN) >= 40


@pytest.mark.parametrize("page, name", SHOWN, ids=lambda x: x)
def test_every_mip_name_the_pages_show_exists(page, name):
    assert resolves(name), f"{page} names {name}, which does not exist"


def test_no_file_cites_the_developers_notes_outside_the_repository():
    """The developers' design and style notes and their measured notes live beside the
    repository, not in it: a reader of a clone cannot follow them."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    citing = [path for path in tracked if (REPO / path).is_file() and path != "tests/test_docs_names.py"
              and re.search(r"\b(?:DESIGN|STYLE)(?:\.md\b| \d| §)|shared/notes", (REPO / path).read_text(errors="replace"))]
    assert citing == [], f"cite a file outside the repository: {citing}"


def test_every_test_file_a_docstring_or_page_names_exists():
    """A module's docstring says which tests exercise it (``pytest tests/test_x.py``): each named
    file exists, as do those the pages name."""
    sources = [*PAGES, *sorted((REPO / "mip").rglob("*.py")), *sorted((REPO / "hydra_plugins").rglob("*.py"))]
    named = {(path.relative_to(REPO).as_posix(), m.group(0)) for path in sources
             for m in re.finditer(r"tests/\w+\.py", path.read_text(encoding="utf-8"))}
    assert len(named) > 20
    missing = sorted(f"{path} names {test}" for path, test in named if not (REPO / test).is_file())
    assert not missing, "name a test file that exists:\n" + "\n".join(missing)
