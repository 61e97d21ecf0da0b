"""User factories named in options (``package.module:factory``): imported where they are called."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .options import OptionError


def load_factory(spec: str, option: str = "publisher") -> Callable[..., Any]:
    """Import ``package.module:attr`` (attr may be dotted)."""
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise OptionError(
            f"option {option}={spec!r}: cannot import module '{module_name}' ({exc}). It must be importable "
            "in Spark's Python workers: install it in the environment PYSPARK_PYTHON points at, or ship it "
            "with spark.submit.pyFiles / SparkContext.addPyFile"
        ) from exc  # its traceback shows which import inside the module failed
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise OptionError(f"option {option}={spec!r}: module '{module_name}' has no attribute '{attr}'") from None
    if not callable(obj):
        raise OptionError(f"option {option}={spec!r} names {type(obj).__name__} {obj!r}, not a callable factory")
    return obj


__all__ = ["load_factory"]
