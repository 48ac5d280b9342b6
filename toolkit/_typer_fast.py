"""Convert levelsess's simple option values without building a pydantic TypeAdapter (start-up, DESIGN.md §8).

typer >= 0.27 converts every parameter of the command it runs through a pydantic ``TypeAdapter``
built on first use (``typer._coercion.build_runtime_param``): importing pydantic and building
the adapters costs more than the rest of ``levelsess fsck`` on a small store.  Our parameters
are all plain ``str``, ``bool``, ``int``, ``float`` (maybe with ``min``/``max``), ``Path``, or a
``list`` of ``str``/``Path``; their usual values (``--jobs 4``, a path, a word, a default) are
converted here exactly as the adapter would convert them.  Anything else - an unusual
spelling such as ``--jobs " 4"`` or ``5_0``, a value out of range, a bool given as text, any
other type or parameter setting - goes to typer's own adapter, built only then, so its value
and its error message (exit 16) are typer's own.

``--help`` is drawn by ``toolkit._help`` without rich; when that module cannot draw a command it
falls back to ``typer.rich_utils``, which imports ``rich.markdown`` (markdown-it)
and ``rich.traceback`` (pygments) at its top for two names it uses only in the "markdown"
markup mode and for a crash's traceback; ``install_light_help()`` imports it with those two
names standing in for the real classes, each loading its module at first use (~40 ms less).

Fail safe: ``install()`` changes nothing unless typer has the internals it relies on
(``_TyperParameter.get_runtime_param`` and ``typer._coercion``); with an older typer (click
types, no pydantic) or a newer one that moved them, the normal path runs.  Likewise, if
``typer.rich_utils`` will not import with the stand-ins, it is left for typer to import as usual.
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from pathlib import Path

_INT = re.compile(r"-?[0-9]{1,18}")  # what int() and pydantic read alike; " 5", "+5", "5_0", "٣" go to pydantic
_FLOAT = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")
_LEAVES = (str, bool, int, float, Path)
_REJECT = object()  # "not sure": let typer's adapter decide


def _leaf(kind, value, info):
    """The value the adapter would return, or _REJECT to let it decide."""
    if kind is str:
        return value if type(value) is str else _REJECT
    if kind is Path:
        if type(value) is str and "\x00" not in value:
            return Path(value)  # then typer's own coerce_cli_path (its exists/readable checks and messages)
        return value if isinstance(value, Path) else _REJECT
    if kind is not int and kind is not float:  # bool: typer skips a bool flag's bool value itself; text or a number is the adapter's
        return _REJECT
    if type(value) is str and (_INT if kind is int else _FLOAT).fullmatch(value):
        number = kind(value)
    elif type(value) is kind:
        number = value
    else:
        return _REJECT
    if (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
        return _REJECT  # the adapter says "Input should be greater than or equal to 0"
    return number


def _fast_kind(descriptor):
    """(leaf type, is_list) when this parameter can take the fast path, else None."""
    from typing import get_args, get_origin

    info, annotation = descriptor.parameter_info, descriptor.annotation
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None or getattr(info, "clamp", False):
        return None
    many = get_origin(annotation) is list
    if many:
        args = get_args(annotation)
        if len(args) != 1:
            return None
        annotation = args[0]
    if annotation not in _LEAVES or (many and annotation not in (str, Path)):
        return None
    if annotation is Path and getattr(info, "path_type", None) is not None:
        return None
    if annotation is not Path and any(getattr(info, flag, False) for flag in ("allow_dash", "resolve_path")):
        return None  # typer would treat it as a path
    return annotation, many


def install() -> bool:
    """Route simple parameters through the fast conversion; False (nothing changed) when typer lacks the hooks."""
    try:
        _coercion, _param_types = importlib.import_module("typer._coercion"), importlib.import_module("typer._param_types")
        _TyperParameter = importlib.import_module("typer.core")._TyperParameter
        RuntimeParam, build_runtime_param = _coercion.RuntimeParam, _coercion.build_runtime_param
        coerce_cli_path = _param_types.coerce_cli_path
        original = _TyperParameter.get_runtime_param
    except (ImportError, AttributeError):
        return False
    if getattr(original, "_levelsess_fast", False):
        return True

    class FastRuntimeParam(RuntimeParam):
        """typer's RuntimeParam contract (its coerce() handles None and multi-value text); only the conversion differs."""

        def __init__(self, descriptor, kind, many):
            super().__init__(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
            object.__setattr__(self, "_kind", kind)
            object.__setattr__(self, "_many", many)

        def _coerce_value(self, value, param, ctx):
            info = self.parameter_info
            if self._many:
                items = value if isinstance(value, (list, tuple)) else [value]
                converted = [_leaf(self._kind, item, info) for item in items]
                ok = _REJECT not in converted
            else:
                converted = _leaf(self._kind, value, info)
                ok = converted is not _REJECT
            if not ok:
                return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)
            if self._kind is Path:
                return ([coerce_cli_path(p, info, path_type=Path, param=param, ctx=ctx) for p in converted] if self._many
                        else coerce_cli_path(converted, info, path_type=Path, param=param, ctx=ctx))
            return converted

    def get_runtime_param(self):
        if getattr(self, "_runtime_param", None) is None:
            found = _fast_kind(self.type_descriptor) if hasattr(self, "type_descriptor") else None
            if found is not None:
                self._runtime_param = FastRuntimeParam(self.type_descriptor, *found)
        return original(self)

    get_runtime_param._levelsess_fast = True
    _TyperParameter.get_runtime_param = get_runtime_param
    return True


_DEFERRED = (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))


def _stand_in(module: str, name: str) -> type:
    """A class that is ``module.name`` for every use typer makes of it: calls, attributes, isinstance."""
    def real():
        return getattr(importlib.import_module(module), name)

    class Deferred(type):
        def __getattr__(cls, attr):
            return getattr(real(), attr)

        def __instancecheck__(cls, obj):
            return isinstance(obj, real())

        def __subclasscheck__(cls, sub):
            return issubclass(sub, real())

    def new(cls, *args, **kwargs):
        return real()(*args, **kwargs)

    return Deferred(name, (), {"__new__": new, "__module__": module, "__qualname__": name})


def import_rich_utils() -> None:
    """Import typer.rich_utils with rich.markdown and rich.traceback deferred (unless already loaded)."""
    if "typer.rich_utils" in sys.modules:
        return
    placeholders = {}
    for module, name in _DEFERRED:
        if module not in sys.modules:
            placeholder = types.ModuleType(module)
            setattr(placeholder, name, _stand_in(module, name))
            placeholders[module] = placeholder
    sys.modules.update(placeholders)
    try:
        importlib.import_module("typer.rich_utils")
    except Exception:  # noqa: BLE001 - typer changed what it takes from them: it imports rich_utils itself, as usual
        sys.modules.pop("typer.rich_utils", None)
    finally:
        for module, placeholder in placeholders.items():
            if sys.modules.get(module) is placeholder:
                del sys.modules[module]


def wrap_format_help(make, marker: str) -> bool:
    """Replace TyperCommand's and TyperGroup's ``format_help`` by ``make(original)``, once (a
    replacement carries ``marker``); False when typer has no such classes."""
    try:
        from typer.core import TyperCommand, TyperGroup
    except ImportError:
        return False
    for cls in (TyperCommand, TyperGroup):
        original = cls.__dict__.get("format_help")
        if original is None or getattr(original, marker, False):
            continue
        replacement = make(original)
        setattr(replacement, marker, True)
        cls.format_help = replacement
    return True


def install_light_help() -> bool:
    """Make TyperCommand and TyperGroup import rich_utils the light way before rendering --help."""
    def make(original):
        def format_help(self, ctx, formatter):
            import_rich_utils()
            return original(self, ctx, formatter)

        return format_help

    return wrap_format_help(make, "_levelsess_fast")
