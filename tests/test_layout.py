"""Files grow by responsibility (one responsibility a module): no module of mip/ over 300 lines, no
function over 60 and no class over 200, unless it is listed below with the reason it may be longer."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 60

#: Modules (``mip/x.py``) and functions (``mip/x.py:Class.method``) that may be longer, and why.
#: Keep it short: an entry that is no longer needed fails the test too.
ALLOWED: dict[str, str] = {}


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    """Every function and method with its dotted name (``Class.method``, ``outer.inner``)."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                found.append((name, node))
            found += _functions(node, f"{name}.")
        else:
            found += _functions(node, prefix)
    return found


def oversized(package: Path, root: Path) -> dict[str, int]:
    """Modules over MAX_MODULE_LINES and functions over MAX_FUNCTION_LINES under ``package``,
    named relative to ``root``, with their length in lines."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            found[name] = lines
        for qualname, node in _functions(ast.parse(text)):
            if (lines := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                found[f"{name}:{qualname}"] = lines
    return found


def test_no_module_or_function_of_mip_is_too_long_without_a_reason():
    found = oversized(REPO / "mip", REPO)
    unexplained = {name: lines for name, lines in found.items() if name not in ALLOWED}
    assert not unexplained, (
        f"Too long: {unexplained}. Split along the responsibilities (one responsibility a module), or add it to ALLOWED in "
        "tests/test_layout.py with the reason it may be longer.")
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"No longer too long, so drop them from ALLOWED: {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_check_finds_a_long_module_and_a_long_method(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (package / "ok.py").write_text(f"class C:\n    def fits(self):\n{body}")  # exactly the limit
    (package / "long.py").write_text(f"class C:\n    async def m(self):\n{body}        x = 0\n" + "\n" * MAX_MODULE_LINES)
    assert oversized(package, tmp_path) == {"pkg/long.py": MAX_MODULE_LINES + MAX_FUNCTION_LINES + 2,
                                            "pkg/long.py:C.m": MAX_FUNCTION_LINES + 1}


MAX_CLASS_LINES = 200

#: Classes (``mip/x.py:Class``) that may be longer, and why. An entry no longer needed fails the test too.
CLASSES_ALLOWED: dict[str, str] = {}


def long_classes(package: Path, root: Path) -> dict[str, int]:
    """Classes over MAX_CLASS_LINES under ``package`` (``path:Class``, nested ones too), with their length."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (lines := node.end_lineno - node.lineno + 1) > MAX_CLASS_LINES:
                found[f"{name}:{node.name}"] = lines
    return found


def test_no_class_of_mip_is_over_200_lines_without_a_reason():
    found = long_classes(REPO / "mip", REPO)
    unexplained = {name: lines for name, lines in found.items() if name not in CLASSES_ALLOWED}
    assert not unexplained, (f"Too long: {unexplained}. Split the class along its concepts, or say in "
                             "CLASSES_ALLOWED why not.")
    stale = sorted(set(CLASSES_ALLOWED) - set(found))
    assert not stale, f"No longer too long, so drop them from CLASSES_ALLOWED: {stale}"


def test_the_class_check_finds_a_long_class(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CLASS_LINES - 1))
    (package / "m.py").write_text(f"class Fits:\n{body}\nclass Long:\n{body}    y = 0\n")
    assert long_classes(package, tmp_path) == {"pkg/m.py:Long": MAX_CLASS_LINES + 1}


MAX_LINE = 120


def long_lines(package: Path, root: Path) -> dict[str, list[int]]:
    """The lines over MAX_LINE characters of each module under ``package`` (numbered from 1)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if over := [n for n, line in enumerate(lines, 1) if len(line) > MAX_LINE]:
            found[path.relative_to(root).as_posix()] = over
    return found


def test_no_line_of_mip_is_over_120_characters():
    found = {**long_lines(REPO / "mip", REPO), **long_lines(REPO / "hydra_plugins", REPO)}
    assert not found, f"Lines over {MAX_LINE} characters (file: line numbers): {found}. Wrap them."


def test_the_line_check_finds_a_long_line(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text("x = 1\n" + "#" * MAX_LINE + "\n" + "#" * (MAX_LINE + 1) + "\n"
                                  + "π" * MAX_LINE + "\n", encoding="utf-8")  # characters counted, not bytes
    assert long_lines(package, tmp_path) == {"pkg/m.py": [3]}
