"""The layout protocol is the whole contract (issue "A house with one-way stairs").

Every registered layout has every member :class:`toolkit.layouts.base.Layout` declares, of the
right kind (a method where a method is declared, a value where a value is); and no module outside
the layouts reaches for a member of a layout that the protocol does not declare, nor asks which
layout it holds (``is LEVELCODE``, ``getattr(layout, …)``, ``layout.name == "…"``).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import toolkit
from toolkit.layouts import ALL
from toolkit.layouts.base import Layout

ROOT = Path(toolkit.__file__).parent
LAYOUT_NAMES = {"LEVELCODE", "LOGICIAN", "CLAUDE_CODE", "CODEX", "GEMINI"}


def _declared() -> tuple[set[str], set[str]]:
    """The protocol's methods and its values (annotated attributes)."""
    methods = {name for name, value in vars(Layout).items() if inspect.isfunction(value) and not name.startswith("_")}
    values = set(Layout.__annotations__)
    return methods, values


METHODS, VALUES = _declared()


def test_the_protocol_declares_what_callers_use_and_nothing_twice():
    assert METHODS and VALUES and not METHODS & VALUES
    assert {"writer", "holding", "trash_paths", "relink_journal", "describes", "cache_is_derived", "relinks",
            "migrates"} <= METHODS | VALUES


@pytest.mark.parametrize("layout", ALL, ids=lambda layout: layout.name)
def test_every_registered_layout_implements_the_whole_protocol(layout):
    for name in sorted(METHODS):
        member = getattr(layout, name, None)
        assert callable(member), f"{layout.name} lacks the method {name}"
        declared = inspect.signature(getattr(Layout, name))
        got = inspect.signature(member)
        wanted = [p for p in declared.parameters.values() if p.name != "self"]
        for parameter in wanted:
            assert parameter.name in got.parameters or any(
                p.kind is p.VAR_POSITIONAL for p in got.parameters.values()), f"{layout.name}.{name} lacks {parameter.name}"
    for name in sorted(VALUES):
        assert hasattr(layout, name), f"{layout.name} lacks {name}"
        assert not inspect.ismethod(getattr(layout, name)), f"{layout.name}.{name} should be a value"


def _callers() -> list[Path]:
    return [p for p in sorted(ROOT.rglob("*.py")) if "layouts" not in p.relative_to(ROOT).parts]


def _is_layout(node: ast.AST) -> bool:
    """An expression that holds a layout: ``layout``, ``x.layout``, ``get_layout(…)``, ``LEVELCODE``."""
    if isinstance(node, ast.Name):
        return node.id == "layout" or node.id in LAYOUT_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr == "layout"
    if isinstance(node, ast.Call):
        func = node.func
        return isinstance(func, ast.Name) and func.id in ("get_layout",) or (
            isinstance(func, ast.Attribute) and func.attr == "get_layout")
    return False


def test_no_caller_uses_a_member_the_protocol_does_not_declare_or_asks_which_layout_it_is():
    undeclared, branches = [], []
    for path in _callers():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and _is_layout(node.value) and node.attr not in METHODS | VALUES:
                undeclared.append(f"{where} .{node.attr}")
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                if any(isinstance(n, ast.Name) and n.id in LAYOUT_NAMES for n in [node.left, *node.comparators]):
                    branches.append(f"{where} is {ast.unparse(node)}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                    and node.args and _is_layout(node.args[0]):
                branches.append(f"{where} {ast.unparse(node)}")
    assert not undeclared, "members callers use that Layout does not declare:\n" + "\n".join(undeclared)
    assert not branches, "callers that ask which layout they hold:\n" + "\n".join(branches)


def test_the_walk_would_see_a_stray_member_and_a_branch():
    """The test above can fail: the same walk over a snippet that does both."""
    tree = ast.parse("if folder.layout is LEVELCODE:\n    folder.layout.secret_thing()\n")
    attributes = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _is_layout(n.value)]
    assert [a.attr for a in attributes if a.attr not in METHODS | VALUES] == ["secret_thing"]
