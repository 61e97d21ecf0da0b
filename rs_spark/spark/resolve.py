"""Where the Publisher comes from: a ``package.module:factory`` or an rs_spark.net endpoint."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Dict

from .options import OptionError, SourceOptions


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
        ) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise OptionError(f"option {option}={spec!r}: module '{module_name}' has no attribute '{attr}'") from None
    if not callable(obj):
        raise OptionError(f"option {option}={spec!r} names {type(obj).__name__} {obj!r}, not a callable factory")
    return obj  # type: ignore[no-any-return]


def make_publisher(opts: SourceOptions) -> Any:
    """Build the Publisher for these options (called in the process that subscribes)."""
    if opts.publisher:
        factory = load_factory(opts.publisher)
        options: Dict[str, Any] = dict(opts.raw)
        pub = factory(options)
        if pub is None or not callable(getattr(pub, "subscribe", None)):
            raise OptionError(
                f"option publisher={opts.publisher!r}: the factory returned {pub!r}, which is not a Publisher "
                "(an object with subscribe(subscriber))"
            )
        return pub
    try:
        from ..net import connect
    except ImportError as exc:  # pragma: no cover - rs_spark.net ships with the package
        raise OptionError(f"option endpoint={opts.endpoint!r} needs rs_spark.net, which failed to import: {exc}")
    kwargs = {"token": opts.token} if opts.token else {}
    return connect(opts.endpoint, **kwargs)


__all__ = ["load_factory", "make_publisher"]
