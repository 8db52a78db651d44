"""The import graph of ``pipes/`` has no circles.

Every module under ``pipes/`` is parsed with :mod:`ast` (nothing is imported) and every import of a ``pipes.*``
module is collected: absolute and relative, at module level and inside functions and classes, and inside
``if TYPE_CHECKING:`` blocks too (a type-only import is still a dependency between the two modules; a cycle
hidden behind ``TYPE_CHECKING`` is a cycle waiting for the first runtime use).

An edge ``a -> b`` names the module that the statement names: ``from pipes.x import y`` is an edge to
``pipes.x.y`` when ``pipes/x/y.py`` (or ``pipes/x/y/``) exists, else to ``pipes.x`` (``y`` is a name defined
or re-exported there). Importing ``pipes.x.y`` also runs ``pipes/x/__init__.py``, but that implicit parent
import is not an edge: a package ``__init__`` importing its submodules to re-export their names is the usual
layout, and counting the parents would make every sibling import a circle. A submodule that imports its own
package *by name* (``from pipes.check import Machine`` inside ``pipes/check/move.py``) is an edge like any
other and closes a circle with the ``__init__`` that imports it: submodules import the defining module.

The test finds the strongly connected components with more than one module (and self-imports) and prints a
circle through each.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pipes"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted ``name`` that is a module under ``pipes/``."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    resolved = _resolve(alias.name, modules)
                    if resolved is not None:
                        targets.add(resolved)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                resolved = submodule if submodule in modules else _resolve(source, modules)
                if resolved is not None:
                    targets.add(resolved)
    return targets


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module name -> the ``pipes.*`` modules it imports, for every module under ``root / "pipes"``."""
    modules = _modules(root)
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components in discovery order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(sorted(component))
    return components


def _cycle_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest circle from the component's first module back to itself, staying inside the component."""
    members = set(component)
    start = component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return component


def test_graph_sees_the_package():
    graph = import_graph()
    assert "pipes.check.machine" in graph and "pipes.ascend.sim.simulator" in graph
    assert any(graph.values()), "no pipes.* imports found: the parser is broken"


def test_graph_reads_every_kind_of_import(tmp_path):
    """Function-level, ``TYPE_CHECKING``, relative and package-attribute imports are all edges; a package
    ``__init__`` importing its submodules is one-way; the circles found are the real ones."""
    files = {
        "pipes/__init__.py": "",
        "pipes/sub/__init__.py": "from .a import A\nfrom . import b\n",
        "pipes/sub/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\nA = 1\n",
        "pipes/sub/b.py": "def f():\n    from pipes.sub import c\nB = 2\n",
        "pipes/sub/c.py": "import pipes.sub.a\n",
        "pipes/sub/d.py": "from ..sub import A\nfrom pipes import sub\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["pipes.sub"] == {"pipes.sub.a", "pipes.sub.b"}
    assert graph["pipes.sub.a"] == {"pipes.sub.b"}
    assert graph["pipes.sub.b"] == {"pipes.sub.c"}
    assert graph["pipes.sub.c"] == {"pipes.sub.a"}
    assert graph["pipes.sub.d"] == {"pipes.sub"}
    assert _strongly_connected(graph) == [["pipes.sub.a", "pipes.sub.b", "pipes.sub.c"]]
    assert _cycle_through(["pipes.sub.a", "pipes.sub.b", "pipes.sub.c"], graph) == [
        "pipes.sub.a",
        "pipes.sub.b",
        "pipes.sub.c",
        "pipes.sub.a",
    ]


def test_no_import_cycles():
    graph = import_graph()
    components = _strongly_connected(graph)
    report = []
    for component in components:
        report.append(f"{len(component)} modules: {', '.join(component)}")
        report.append("  circle: " + " -> ".join(_cycle_through(component, graph)))
        for module in component:
            inside = sorted(graph[module] & set(component))
            report.append(f"  {module} -> {', '.join(inside)}")
    assert not components, "import cycles under pipes/:\n" + "\n".join(report)
