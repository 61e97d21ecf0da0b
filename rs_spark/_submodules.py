"""Subpackages and modules reachable as attributes of their package, imported on first use.

``import rs_spark`` then ``rs_spark.spark.register(spark)`` works as ``import numpy`` then
``numpy.linalg`` does: each package's module ``__getattr__`` imports a public submodule (a file or
folder of the package whose name does not start with ``_``) when it is first named. Nothing is
imported before that, so ``import rs_spark`` still imports no pyspark (only ``rs_spark.spark``
does). Standard library only: any layer may use it.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable
from types import ModuleType


def lazy_submodules(package: str, path: Iterable[str]) -> tuple[Callable[[str], ModuleType], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``, ``__path__``): a public submodule
    is imported when first named; any other missing name is an ``AttributeError`` as usual."""
    names = frozenset(m.name for m in pkgutil.iter_modules(list(path)) if not m.name.startswith("_"))

    def __getattr__(name: str) -> ModuleType:
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | names)

    return __getattr__, __dir__


__all__ = ["lazy_submodules"]
