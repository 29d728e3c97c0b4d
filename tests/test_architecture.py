"""The package's layering, read from its source with ``ast`` (nothing is imported).

Three rules (STYLE.md "Everywhere", issue 30 "Rooms by job"):

(a) No import cycle among the modules of ``favmac``. EVERY import statement counts: the module-level
    ones and those inside a function. A function-level import is allowed only to defer a heavy
    import (numba kernels, pandas, dask) until it is needed; it must not hide a cycle, so it is an
    edge of the graph like any other. An edge goes to the module named (``from .x import y``: to
    ``favmac.x``, or to ``favmac.x.y`` when that is a module); ``from favmac import name`` where
    ``name`` is not a submodule is an edge to the package ``favmac`` itself. Importing a package's
    submodule also runs the package's ``__init__``; that implicit step is not an edge (a package's
    ``__init__`` importing its own submodules is the usual layout, not a cycle).
(b) No private name crosses a module boundary: no ``from favmac.x import _name`` (dunder names such as
    ``__version__`` are public), and no ``module._name`` where ``module`` is a name bound to a favmac
    module by an import. If two modules need a helper, it is public in one of them.
(c) streamlit and plotly are imported only under ``favmac/ui/`` (the library never needs them), and no
    module outside ``favmac/ui/`` imports ``favmac.ui`` (the app's layer sits on the library, not under it).
"""
from __future__ import annotations

import ast
import pathlib
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "favmac"
UI_ONLY = ("streamlit", "plotly")


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Dotted name -> (path, is a package's __init__) of every module of favmac."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


MODULES = _modules()


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute dotted name of a (possibly relative) ``from`` import's module."""
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _owner(dotted: str) -> str | None:
    """The favmac module an import of ``dotted`` loads (its longest prefix that is a module)."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


class _Imports(ast.NodeVisitor):
    """Every import of one module: favmac edges, third-party roots, private names used across modules."""

    def __init__(self, module: str, is_package: bool):
        self.module, self.is_package = module, is_package
        self.edges: set[str] = set()
        self.roots: set[tuple[str, int]] = set()
        self.private: list[str] = []
        self.module_names: dict[str, str] = {}  # local name -> the favmac module it is bound to

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.roots.add((alias.name.split(".")[0], node.lineno))
            owner = _owner(alias.name) if alias.name.split(".")[0] == "favmac" else None
            if owner is not None:
                self.edges.add(owner)
                if alias.asname:
                    self.module_names[alias.asname] = owner

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _absolute(self.module, self.is_package, node.level, node.module)
        self.roots.add((base.split(".")[0], node.lineno))
        if base.split(".")[0] != "favmac":
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in MODULES:
                self.edges.add(submodule)
                self.module_names[alias.asname or alias.name] = submodule
            else:
                self.edges.add(_owner(base))
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    self.private.append(f"line {node.lineno}: from {base} import {name}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (isinstance(node.value, ast.Name) and node.value.id in self.module_names and node.attr.startswith("_")
                and not node.attr.startswith("__") and self.module_names[node.value.id] != self.module):
            self.private.append(f"line {node.lineno}: {node.value.id}._{node.attr[1:]} "
                                f"({self.module_names[node.value.id]})")
        self.generic_visit(node)


def _parse(path: pathlib.Path) -> ast.Module:
    with warnings.catch_warnings():  # a module's own compile-time warnings (e.g. an escape) are its tests' concern
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _scan() -> dict[str, _Imports]:
    found = {}
    for module, (path, is_package) in MODULES.items():
        visitor = _Imports(module, is_package)
        visitor.visit(_parse(path))
        visitor.edges.discard(module)
        found[module] = visitor
    return found


SCAN = _scan()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_the_scan_sees_the_package():
    """The rules below are checked on the real package: its modules and some known edges are found."""
    assert {"favmac", "favmac.replay", "favmac.universe", "favmac.scores", "favmac.cli", "favmac.io.readers",
            "favmac.tradeoffs", "favmac.target_grid", "favmac.protocols"} <= set(MODULES)
    assert "favmac.scores" in SCAN["favmac.universe"].edges
    assert "favmac.thresholds" in SCAN["favmac.costs"].edges


def test_cycles_are_found():
    """The cycle finder itself, on a small graph with one cycle through three modules and a self-free tail."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    graph = {module: {edge for edge in found.edges if edge in MODULES} for module, found in SCAN.items()}
    cycles = _cycles(graph)
    detail = []
    for component in cycles:
        inside = set(component)
        detail.append("; ".join(f"{m} -> {', '.join(sorted(graph[m] & inside))}" for m in component))
    assert not cycles, "import cycles among favmac modules:\n" + "\n".join(detail)


def test_no_private_name_crosses_a_module():
    crossing = {module: found.private for module, found in SCAN.items() if found.private}
    assert not crossing, "private names used across favmac modules:\n" + "\n".join(
        f"{module}: {item}" for module, items in crossing.items() for item in items)


def test_streamlit_and_plotly_only_in_ui():
    outside = [f"{module} (line {line}): {root}" for module, found in SCAN.items()
               if not (module == "favmac.ui" or module.startswith("favmac.ui."))
               for root, line in found.roots if root in UI_ONLY]
    assert not outside, "the library imports a UI package:\n" + "\n".join(sorted(outside))


def test_the_library_does_not_import_the_app_layer():
    def ui(module):
        return module == "favmac.ui" or module.startswith("favmac.ui.")

    upward = [f"{module} -> {edge}" for module, found in SCAN.items() if not ui(module)
              for edge in sorted(found.edges) if ui(edge)]
    assert not upward, "library modules importing favmac.ui:\n" + "\n".join(upward)


def test_scripts_use_the_library_services_not_the_ui():
    """The trade-off comparison and the target grid are library services (favmac.tradeoffs,
    favmac.target_grid): a script reads them there, not through the app's favmac.ui layer."""
    offenders = []
    for path in sorted((ROOT / "scripts").glob("*.py")):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            offenders += [f"{path.name} line {node.lineno}: {name}" for name in names
                          if name.startswith(("favmac.ui.tradeoffs", "favmac.ui.tradeoff_grid"))]
    assert not offenders, "\n".join(offenders)
