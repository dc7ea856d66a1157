"""The house's sizes, read from the source's syntax trees: no module in src/repro over 800
lines, no function or method over 60 lines (counted from its first decorator to its last line),
so that each room and each function can be read whole (docs/architecture.md, "Why this shape")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "repro"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60
MODULES = sorted(SRC.rglob("*.py"))


def _functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(qualified name, lines from the first decorator to the last line) of every function."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                assert child.end_lineno is not None
                found.append((prefix + child.name, child.end_lineno - first + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(SRC.parent)) for p in paths]


def test_the_modules_are_found() -> None:
    """The walk finds the package (a wrong root would make every size check pass on nothing)."""
    assert len(MODULES) > 50
    assert SRC / "__init__.py" in MODULES


@pytest.mark.parametrize("module", MODULES, ids=_ids(MODULES))
def test_module_length(module: Path) -> None:
    """A module holds at most 800 lines."""
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module.relative_to(SRC.parent)}: {lines} lines"


@pytest.mark.parametrize("module", MODULES, ids=_ids(MODULES))
def test_function_length(module: Path) -> None:
    """Every function and method, decorators included, holds at most 60 lines."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    long = [(name, n) for name, n in _functions(tree) if n > MAX_FUNCTION_LINES]
    assert not long, f"{module.relative_to(SRC.parent)}: {long}"


def test_the_count_includes_decorators() -> None:
    """The measure counts from the first decorator: a 59-line function under two decorators
    is 61 lines long, and a nested function is measured on its own."""
    body = "\n".join(["    x = 1"] * 58)
    source = f"@a\n@b\ndef f():\n{body}\n    def g():\n        pass\n"
    assert dict(_functions(ast.parse(source))) == {"f": 63, "f.g": 2}


def test_no_module_imports_another_modules_private_names() -> None:
    """No module imports a ``_``-named name from another module of repro (a ``_``-named module
    is an internal module, which its package may import): what another module needs is given a
    public name there."""
    found = []
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("repro"):
                continue
            base = SRC.parent.joinpath(*node.module.split("."))
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if (base / f"{name}.py").is_file() or (base / name).is_dir():
                    continue
                found.append(f"{module.relative_to(SRC.parent)}: {node.module}.{name}")
    assert not found
