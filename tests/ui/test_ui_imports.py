"""The favmac.ui modules import each other without a cycle, and only at module level.

A cycle hidden by an import inside a function (state -> widgets -> state) is what issue 17
removed: every module's imports of other favmac.ui modules are read from its source with ``ast``
and must form a graph without cycles, with none of them inside a function or class.
"""
from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import favmac.ui

UI = Path(favmac.ui.__file__).parent
MODULES = sorted(f"favmac.ui.{m.name}" for m in pkgutil.iter_modules([str(UI)]))


def ui_imports(node: ast.AST, module: str) -> set[str]:
    """The favmac.ui modules that the import statements directly under ``node`` name."""
    found = set()
    for stmt in ast.iter_child_nodes(node):
        if isinstance(stmt, ast.Import):
            names = [alias.name for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:  # relative: from . import x / from .x import y
                base = ".".join(module.split(".")[:-stmt.level] + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in stmt.names]
        else:
            continue
        found |= {name for name in names if name in MODULES}
    return found


def module_tree(name: str) -> ast.Module:
    return ast.parse((UI / f"{name.rsplit('.', 1)[1]}.py").read_text(encoding="utf-8"))


def graph() -> dict[str, set[str]]:
    return {name: ui_imports(module_tree(name), name) - {name} for name in MODULES}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges`` as a path [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert ui_imports(ast.parse("from favmac.ui import jobs, session\nimport favmac.ui.widgets\nfrom . import text"),
                      "favmac.ui.pages") == {"favmac.ui.jobs", "favmac.ui.session", "favmac.ui.widgets", "favmac.ui.text"}


@pytest.mark.parametrize("name", MODULES)
def test_every_ui_module_imports(name):
    importlib.import_module(name)


def test_no_import_cycle_between_ui_modules():
    edges = graph()
    assert len(edges) >= 20 and any(edges.values())
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges))


@pytest.mark.parametrize("name", MODULES)
def test_ui_modules_import_each_other_only_at_module_level(name):
    tree = module_tree(name)
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                hidden |= ui_imports(inner, name)
    assert not hidden, f"{name} imports {sorted(hidden)} inside a function or class"
