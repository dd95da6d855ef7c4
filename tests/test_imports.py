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
# Root modules kept for users: `python -m mip.show` etc., each calling its command's main in mip/entry/.
SHIMS = {"show": "show_command", "summary": "summary_command", "demo": "demo_command", "serve": "serve_command"}


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
    return "mip" if len(parts) == 1 else "entry" if parts[1] in SHIMS else parts[1]


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


def test_module_names_are_unique_across_mip():
    """One file name, one module: ``records`` names one thing wherever it is imported from."""
    seen: dict[str, list[str]] = {}
    for module in modules():
        seen.setdefault(module.rpartition(".")[2], []).append(module)
    clashes = {name: found for name, found in seen.items() if len(found) > 1}
    assert not clashes, f"module names used twice: {clashes}"


def test_an_import_inside_a_function_counts(tmp_path):
    """A lazy (function-level) import is an import too: a lower layer that imports an upper one
    inside a function breaks the layering as much as one at the top of the file."""
    lower = tmp_path / "records.py"
    lower.write_text("def read():\n    from mip.store import Store\n    return Store\n")
    known = {"mip": MIP / "__init__.py", "mip.store": MIP / "store" / "__init__.py",
             "mip.experiment": MIP / "experiment" / "__init__.py", "mip.experiment.records": lower}
    assert imports_of("mip.experiment.records", lower, known) == {"mip.store"}
    lower.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mip.store import Store\n")
    assert imports_of("mip.experiment.records", lower, known) == set()  # never runs


@pytest.mark.parametrize("shim", sorted(SHIMS))
def test_the_shims_only_point_elsewhere(shim):
    """A root shim holds no code of its own and no trick (it never puts another module in its
    place in ``sys.modules``): ``python -m mip.<shim>`` calls its command's main in mip/entry/."""
    import importlib

    text = (MIP / f"{shim}.py").read_text()
    assert len(text.splitlines()) <= 12 and "sys.modules" not in text
    assert importlib.import_module(f"mip.{shim}").main is importlib.import_module(f"mip.entry.{SHIMS[shim]}").main


def composing(path: Path) -> list[str]:
    """What in ``path`` composes a Hydra config: an import of hydra (its Compose API, its ConfigStore) and
    a call of :func:`mip.entry.config_store.compose_conf`, ``line: text`` each."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        called = isinstance(node, ast.Call) and ast.unparse(node.func).rpartition(".")[2] == "compose_conf"
        if called or any(n == "hydra" or n.startswith("hydra.") for n in names):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_tool_composes_a_config():
    """Entry is every command's plumbing and ``main`` (composing configs included), tools what the commands
    do: a tool takes composed configs, or a composing callable, from its command in mip/entry/."""
    found = {module: hits for module, path in modules().items() if module.startswith("mip.tools.")
             and (hits := composing(path))}
    assert not found, f"mip/tools/ composes configs; do it in the command's mip/entry/ module: {found}"


def test_the_composing_check_finds_a_compose(tmp_path):
    tool = tmp_path / "tool.py"
    tool.write_text("def tasks(conf):\n    from hydra import compose\n    return config_store.compose_conf(conf)\n")
    assert composing(tool) == ["2: from hydra import compose", "3: config_store.compose_conf(conf)"]
    tool.write_text("from omegaconf import OmegaConf\ndef tasks(compose):\n    return compose('task=all')\n")
    assert composing(tool) == []
