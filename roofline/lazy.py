"""Lazy public faces: a package's heavy re-exports load on first use (PEP 562).

A face lists its heavy re-exports as ordinary ``from .module import name`` lines under
``if TYPE_CHECKING:`` (so type checkers, linters and readers see plain imports) and hands
its own file to `lazy_exports`, which reads those lines and returns the module's
``__getattr__`` and ``__dir__``: ``from genz import predict`` then imports
``genz.predictor`` (and numpy) only when a caller asks for ``predict``. Light re-exports
stay eager imports. A name that equals a submodule's name (``search.economics``, a package and a function) must be
an eager re-export: importing the submodule would otherwise bind the module in its place.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` of ``package`` for the names under ``TYPE_CHECKING``.

    Parameters
    ----------
    package
        The package's ``__name__``.
    init_file
        Its ``__init__.py`` (``__file__``), whose ``if TYPE_CHECKING:`` block holds
        relative ``from .module import name`` lines.

    Returns
    -------
    tuple[Callable[[str], Any], Callable[[], list[str]]]
        ``__getattr__`` imports the module that defines a requested name, binds every
        name that module exports onto the package (later look-ups are plain attributes)
        and returns it; unknown names raise `AttributeError` as for any module.
        ``__dir__`` lists the loaded and the lazy names (for completion in notebooks).
    """
    sources = _type_checking_imports(Path(init_file).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(sources[name], package)
        face = sys.modules[package]
        for exported, source in sources.items():
            if source == sources[name]:
                setattr(face, exported, getattr(module, exported))
        return getattr(module, name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(sources))

    return __getattr__, __dir__


def _type_checking_imports(source: str) -> dict[str, str]:
    """Exported name -> relative module (``'.predictor'``) of the ``TYPE_CHECKING`` block."""
    origins: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                for alias in statement.names:
                    origins[alias.asname or alias.name] = f".{statement.module}"
    return origins


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
