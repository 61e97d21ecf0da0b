"""Where the Publisher comes from: a ``package.module:factory`` or an rs_spark.net endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...net.protocol.address import redact
from ..factories import load_factory
from ..options import OptionError
from .options import SourceOptions


class PublisherFactoryError(OptionError):
    """The ``publisher`` factory raised, or returned something that is not a Publisher."""


def _short(x: Any) -> str:
    r = f"{type(x).__name__} {x!r}"
    return r if len(r) <= 120 else r[:120] + "..."


def make_publisher(opts: SourceOptions, schema: Any = None) -> Any:
    """Build the Publisher for these options (called in the process that subscribes).
    ``schema``: the source's ``pyarrow.Schema``, handed to a JVM publisher's encoder."""
    if opts.jvm_publisher:
        return _jvm_publisher(opts, schema)
    if opts.publisher:
        factory = load_factory(opts.publisher)
        options: dict[str, Any] = dict(opts.factory)
        try:
            pub = factory(options)
        except Exception as exc:
            raise PublisherFactoryError(
                f"option publisher={opts.publisher!r}: the factory raised {type(exc).__name__}: {exc}. Fix the "
                f"factory, or the options it reads (option publisher.NAME reaches it as NAME)"
            ) from exc
        if isinstance(pub, Mapping):
            raise PublisherFactoryError(
                f"option publisher={opts.publisher!r}: the factory returned a mapping of {len(pub)} partitions "
                f"({_short(list(pub)[:8])}); option publisher takes one Publisher. Serve each partition's Publisher "
                "(rs_spark.net.serve) and list them in option endpoint as id=address, or pass the mapping to "
                "rs_spark.read_stream(spark, {...})"
            )
        if pub is None or not callable(getattr(pub, "subscribe", None)):
            raise PublisherFactoryError(
                f"option publisher={opts.publisher!r}: the factory returned {_short(pub)}, which is not a Publisher "
                "(an object with subscribe(subscriber)); make the factory return one, e.g. "
                "rs_spark.streams.from_iterable(...)"
            )
        return pub
    try:
        from ...net import connect
    except ImportError as exc:  # pragma: no cover - rs_spark.net ships with the package
        raise OptionError(
            f"option endpoint={redact(repr(opts.endpoint))} needs rs_spark.net, which failed to import: {exc}"
        ) from exc
    kwargs = opts.client_options()
    if len(opts.endpoints) != 1:
        raise OptionError(
            f"option endpoint names {len(opts.endpoints)} partitions ({', '.join(opts.endpoints)}); several endpoints "
            "are read by a streaming query (spark.readStream), whose executors fetch from each; spark.read reads one"
        )
    (address,) = opts.endpoints.values()
    return connect(address, **kwargs)


def _jvm_publisher(opts: SourceOptions, schema: Any) -> Any:
    """Option jvmPublisher: a JVM Publisher built in a standalone JVM this process starts (Spark's
    reader process has no py4j link to the driver JVM), handing over Arrow batches."""
    from ...jvm.factory import JvmFactoryError, open_publisher
    from ...jvm.schema import UnsupportedColumn, to_spec

    if schema is not None:  # the JVM encodes straight into the source's columns
        import pyarrow as pa

        schema = pa.schema([f for f in schema if f.name != opts.corrupt_column])
        try:
            to_spec(schema)  # refused at the query's start already (datasource._check_jvm_columns)
        except UnsupportedColumn as exc:
            raise PublisherFactoryError(f"option jvmPublisher={opts.jvm_publisher!r}: {exc}") from None
    try:
        return open_publisher(
            opts.jvm_publisher or "",
            opts.jvm_jars,
            dict(opts.factory),
            schema=schema,
            elements="batches",
            batch_rows=max(1, min(65_536, opts.max_buffered)),
        )
    except JvmFactoryError as exc:
        raise PublisherFactoryError(str(exc)) from exc


__all__ = ["make_publisher", "PublisherFactoryError"]
