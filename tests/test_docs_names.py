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
    file exists, as do those the pages, the tests, the benchmarks and the configs name."""
    sources = [*PAGES, *(REPO / "Makefile", REPO / "pyproject.toml"),
               *(path for folder in ("mip", "hydra_plugins", "tests", "benchmarks", "conf")
                 for glob in ("*.py", "*.md", "*.yaml") for path in sorted((REPO / folder).rglob(glob))),
               *sorted(REPO.glob("*.py"))]
    named = {(path.relative_to(REPO).as_posix(), m.group(0)) for path in sources
             for m in re.finditer(r"tests/\w+\.py", path.read_text(encoding="utf-8"))}
    assert len(named) > 20
    missing = sorted(f"{path} names {test}" for path, test in named
                     if not (REPO / test).is_file() and test != "tests/test_x.py")  # the docstring's placeholder
    assert not missing, "name a test file that exists:\n" + "\n".join(missing)


def modules_the_map_names(page: str) -> set[str]:
    """The packages (``mip/x/``) and modules (``mip/x/y.py``) that docs/architecture.md's "Every
    module" list names: each bullet is a package, and each name after it one of its modules, or a
    subpackage (``sources/``) whose modules follow it."""
    section = page.split("\n## Every module\n", 1)[1].split("\n## ", 1)[0]
    named: set[str] = set()
    for bullet in re.split(r"\n- ", section)[1:]:
        package, _, rest = bullet.partition(":")
        package = package.strip("` ")
        named.add(package)
        for name in re.findall(r"`([^`]+)`", rest):
            if name.endswith("/"):
                package = f"{package}{name}"
                named.add(package)
            else:
                named.add(f"{package}{name}.py")
    return named


def test_the_architecture_page_names_every_module_and_nothing_else():
    """A newcomer looking for a module's home finds every package and module of mip/ on the map,
    and no name there that the code does not have."""
    real = {p.relative_to(REPO).as_posix() for p in (REPO / "mip").rglob("*.py") if p.name != "__init__.py"}
    real |= {p.parent.relative_to(REPO).as_posix() + "/" for p in (REPO / "mip").rglob("__init__.py")}
    named = modules_the_map_names((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert not real - named, f"docs/architecture.md's 'Every module' lacks: {sorted(real - named)}"
    assert not named - real, f"docs/architecture.md's 'Every module' names what does not exist: {sorted(named - real)}"


def test_the_module_list_check_reads_packages_subpackages_and_modules():
    page = "# x\n\n## Every module\n\n- `mip/`: `show` a shim.\n- `mip/data/`: `pools` pools; `sources/` loaders: " \
           "`hub` the hub,\n  `sst2`.\n\n## Next\n\n- `mip/job/`: `loop`."
    assert modules_the_map_names(page) == {"mip/", "mip/show.py", "mip/data/", "mip/data/pools.py",
                                           "mip/data/sources/", "mip/data/sources/hub.py", "mip/data/sources/sst2.py"}


def test_every_package_says_what_lives_there():
    """Each package's ``__init__`` opens with a docstring that says what lives in it."""
    import ast

    bare = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "mip").rglob("__init__.py")
                  if len(ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or "") < 40)
    assert not bare, f"say in the package's docstring what lives there: {bare}"


ROLE = re.compile(r":(?:mod|func|class|attr|meth|data|exc):`~?(mip(?:\.\w+)+)`")


def _instance_attribute(name: str) -> bool:
    """``mip.x.Class.attr`` where ``Class`` sets ``self.attr`` (an attribute no class holds)."""
    import inspect

    owner, _, attr = name.rpartition(".")
    if not resolves(owner):
        return False
    module, _, cls = owner.rpartition(".")
    found = getattr(importlib.import_module(module), cls, None) if resolves(module) else None
    return inspect.isclass(found) and f"self.{attr}" in inspect.getsource(found)


def test_every_cross_reference_in_the_code_exists():
    """A docstring's ``:mod:`` / ``:func:`` / ``:class:`` … reference to ``mip.…`` names a module,
    class, function or attribute of this checkout: a module renamed or merged leaves none behind."""
    named = {(path.relative_to(REPO).as_posix(), m.group(1)) for folder in ("mip", "hydra_plugins")
             for path in sorted((REPO / folder).rglob("*.py")) for m in ROLE.finditer(path.read_text(encoding="utf-8"))}
    assert len(named) > 100
    missing = sorted(f"{path}: {name}" for path, name in named if not resolves(name) and not _instance_attribute(name))
    assert not missing, "name what exists:\n" + "\n".join(missing)
