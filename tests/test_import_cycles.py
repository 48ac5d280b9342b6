"""One-way stairs: no import cycle among levelsess's modules.

Every import statement counts, at the top of a module, inside a function or under
``if TYPE_CHECKING``: ``from .x import y`` is an edge to ``x.y`` when that is a module, else to
``x``.  A layout is found by name through :mod:`toolkit.layouts.registry`, never by importing
the module above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import toolkit

ROOT = Path(toolkit.__file__).parent


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(name: str, path: Path, node: ast.AST, modules: dict[str, Path]) -> list[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    if isinstance(node, ast.ImportFrom):
        base = package[: len(package) - node.level + 1] if node.level else []
        module = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
        for alias in node.names:
            full = f"{module}.{alias.name}"
            out.append(full if full in modules else module)
    else:
        out += [alias.name for alias in node.names]
    return [t for t in out if t in modules and t != name]


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = _modules(root)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges[name].update(_targets(name, path, node, modules))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_its_way_back_to_itself():
    found = cycles(graph())
    assert not found, "import cycles (every import counted, in functions too):\n" + "\n".join(map(str, found))


def test_the_walk_sees_a_cycle_through_an_import_inside_a_function(tmp_path):
    """The test above can fail: a package whose two modules import each other, one of them lazily."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import thing\n")
    (package / "b.py").write_text("def thing():\n    from . import a\n    return a\n")
    (package / "c.py").write_text("from . import a\n")
    assert cycles(graph(package)) == [["pkg.a", "pkg.b"]]


def test_the_reader_and_the_contract_import_no_layout():
    edges = graph()
    layouts = {name for name in edges if name.startswith("toolkit.layouts.")} - {
        "toolkit.layouts.base", "toolkit.layouts.registry"}
    for below in ("toolkit.journal", "toolkit.scan", "toolkit.index", "toolkit.rows", "toolkit.layouts.base",
                  "toolkit.layouts.registry", "toolkit.render"):
        assert not edges[below] & (layouts | {"toolkit.layouts"}), (below, edges[below] & layouts)
