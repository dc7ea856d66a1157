"""The house's sizes, read from the source's syntax trees: no module in src/repro over 800
lines, no function or method over 60 lines (counted from its first decorator to its last line),
so that each room and each function can be read whole (docs/architecture.md, "Why this shape")."""

from __future__ import annotations

import ast
import io
import tokenize
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


def _comment_lines(source: str) -> tuple[set[int], set[int]]:
    """The lines that hold a comment, and those that hold nothing else."""
    anywhere: set[int] = set()
    only: set[int] = set()
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row = token.start[0]
            anywhere.add(row)
            if lines[row - 1].lstrip().startswith("#"):
                only.add(row)
    return anywhere, only


def _unexplained_imports(source: str) -> list[int]:
    """The lines of the function-local imports of ``source`` that no comment explains: none on
    the import's own lines, none on a line of its own just above it or just above the run of
    consecutive import lines it belongs to."""
    anywhere, only = _comment_lines(source)
    found: list[int] = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                explained = False
                previous: ast.stmt | None = None
                for statement in block:
                    if not isinstance(statement, ast.Import | ast.ImportFrom):
                        previous = None
                        continue
                    assert statement.end_lineno is not None
                    own = range(statement.lineno, statement.end_lineno + 1)
                    run_goes_on = (
                        previous is not None and previous.end_lineno == statement.lineno - 1
                    )
                    explained = (
                        any(row in anywhere for row in own)
                        or statement.lineno - 1 in only
                        or (run_goes_on and explained)
                    )
                    if not explained:
                        found.append(statement.lineno)
                    previous = statement
    return sorted(set(found))


@pytest.mark.parametrize("module", MODULES, ids=_ids(MODULES))
def test_function_local_imports_say_why(module: Path) -> None:
    """A function imports inside itself only where the import is lazy on purpose (issue 48),
    and then a comment says why: on the import's line, on the line above it, or on the line
    above the run of consecutive import lines it belongs to. Any other import belongs at the
    top of its module."""
    found = _unexplained_imports(module.read_text(encoding="utf-8"))
    assert not found, f"{module.relative_to(SRC.parent)}: unexplained imports at lines {found}"


def test_an_unexplained_local_import_is_found() -> None:
    """The rule finds a function-local import no comment explains (alone, after a blank line
    that ends a commented run, or after a statement), and passes one whose comment is on its
    line, just above it, or above its run of imports."""
    source = (
        "import os\n"
        "def f():\n"
        "    import json\n"
        "    # Lazy: why.\n"
        "    import csv\n"
        "    from re import (\n"
        "        sub,\n"
        "    )\n"
        "\n"
        "    import abc\n"
        "    x = 1  # a comment of another line\n"
        "    import array\n"
        "    import ast  # Lazy: why.\n"
        "    if x:\n"
        "        import math\n"
        "    else:\n"
        "        # Lazy: why.\n"
        "        import cmath\n"
    )
    assert _unexplained_imports(source) == [3, 10, 12, 15]
