"""The shape of mip/: no import cycle among its modules, packages that
import only the packages below them, and module names that are unique across mip/.

Imports are read with :mod:`ast`, not run: module-level and function-level imports both count;
an import under ``if TYPE_CHECKING:`` does not (it never runs). Importing ``mip.a.b`` runs
``mip/a/__init__.py`` first, so it counts as an import of ``mip.a`` too (unless the importer
lies inside ``mip.a``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MIP = Path(__file__).resolve().parent.parent / "mip"

# Each package of mip/ and the packages it may import, bottom to top (the pipeline, docs/architecture.md).
# ``registry`` is the root module mip/registry.py (name → "module:attribute" lookups).
ALLOWED = {
    "registry": set(),
    "config": {"registry"},
    "data": {"config"},
    "experiment": {"config", "data"},
    "store": {"config", "data", "experiment"},
    "tracking": {"config", "experiment"},
    "models": {"registry", "config", "experiment", "tracking"},
    "strategies": {"registry", "config", "data", "experiment", "models"},
    "job": {"registry", "config", "data", "experiment", "store", "tracking", "models", "strategies"},
    "analysis": {"config", "data", "experiment", "store", "tracking", "models"},
    "attribution": {"config", "data", "experiment", "store", "models", "strategies", "analysis"},
    "tools": {"registry", "config", "data", "experiment", "store", "tracking", "models", "strategies", "job",
              "analysis", "attribution"},
    "entry": {"registry", "config", "data", "experiment", "store", "tracking", "models", "strategies", "job",
              "analysis", "attribution", "tools"},
}
# Root modules kept for users: `python -m mip.show` etc. and the mip 0.2/0.3 import paths.
SHIMS = {"show": "tools", "summary": "tools", "demo": "tools", "serve": "tools", "records": "store",
         "runner": "job"}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(MIP.rglob("*.py")):
        parts = list(path.relative_to(MIP.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    return {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)}


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of mip/ that running ``module`` imports (with the packages their import runs)."""
    tree = ast.parse(path.read_text())
    skip, package, named = _type_checking_nodes(tree), (module if path.name == "__init__.py" else module.rpartition(".")[0]), set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            named |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            named |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    out = set()
    for name in (n for n in named if n == "mip" or n.startswith("mip.")):
        target = _resolve(name, known)
        while target and target != "mip":
            if not (module == target or module.startswith(target + ".")):
                out.add(target)
            target = target.rpartition(".")[0]
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports_of(module, path, known) for module, path in known.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges`` as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def package_of(module: str) -> str:
    parts = module.split(".")
    return "mip" if len(parts) == 1 else SHIMS.get(parts[1], parts[1])


def test_find_cycle_reports_the_cycle_it_finds():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_among_mips_modules():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_each_package_imports_only_the_packages_below_it():
    assert find_cycle(ALLOWED) is None, "the allowed package graph itself has a cycle"
    wrong = sorted(f"{module} → {target}" for module, targets in graph().items() for target in targets
                   if package_of(module) in ALLOWED and package_of(target) != package_of(module)
                   and package_of(target) not in ALLOWED[package_of(module)])
    assert not wrong, "imports against the layering (tests/test_imports.py ALLOWED):\n" + "\n".join(wrong)


def test_every_package_has_its_place():
    packages = {package_of(m) for m in modules()} - {"mip"}
    assert packages <= set(ALLOWED), f"a package or root module with no place in ALLOWED: {packages - set(ALLOWED)}"


#: Root shims that still share a file name with the module they forward to, and why.
SHARED_NAMES = {
    "show": "mip/tools/show.py is being changed in parallel (escaping); its rename waits for that to merge",
    "summary": "mip/tools/summary.py is being changed in parallel (cost lines); its rename waits for that to merge",
    "records": "mip.experiment.records is imported across every layer; renaming it is a change of its own",
}


def test_module_names_are_unique_across_mip():
    seen: dict[str, list[str]] = {}
    for module in modules():
        if module.count(".") == 1 and module.split(".")[1] in SHARED_NAMES:
            continue
        seen.setdefault(module.rpartition(".")[2], []).append(module)
    clashes = {name: found for name, found in seen.items() if len(found) > 1}
    assert not clashes, f"module names used twice: {clashes}"


@pytest.mark.parametrize("shim", sorted(SHIMS))
def test_the_shims_only_point_elsewhere(shim):
    """A root shim holds no code of its own: it imports its module from the package that owns it."""
    assert len((MIP / f"{shim}.py").read_text().splitlines()) <= 12


def test_older_import_paths_still_import():
    """Scripts written against mip 0.2/0.3 import from ``mip.records`` and ``mip.runner``; users
    type ``python -m mip.show`` (and summary, demo, serve): each still finds the moved code."""
    import importlib

    from mip.records import JsonColumn, Record, Store, atomic_write
    from mip.runner import JobSummary, run_job
    from mip.data.columns import JsonColumn as column
    from mip.data.files import atomic_write as writer
    from mip.experiment.records import Record as record
    from mip.job import JobSummary as summary, run_job as runner
    from mip.store import Store as store

    assert (Record, Store, atomic_write, JsonColumn, JobSummary, run_job) == (record, store, writer, column, summary,
                                                                               runner)
    tools = {"show": "show", "summary": "summary", "demo": "embedded_demo", "serve": "embedded_server"}
    for shim, tool in tools.items():
        assert importlib.import_module(f"mip.{shim}").main is importlib.import_module(f"mip.tools.{tool}").main
