"""rs_spark: Reactive Streams for PySpark Structured Streaming.

``rs_spark.streams`` is the pure-Python Reactive Streams core; ``rs_spark.tck`` checks any
Publisher, Subscriber or Processor against the spec rule by rule; ``rs_spark.net`` serves them
across processes; ``rs_spark.spark`` is the ``reactive`` source and sink (and
``rs_spark.spark.realtime``, Spark's real-time mode). The helpers here serve a Publisher or a
Subscriber in this process to a query: :func:`read_stream`, :func:`write_stream`,
:func:`serve_sink`, :func:`stop_served`; :func:`sink_state` finds what rs_spark holds for a query.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .spark.sink.state import SinkState

from ._version import __version__


def read_stream(spark: Any, publisher: Any, schema: Any = None, **options: Any) -> Any:
    """A streaming DataFrame over ``publisher`` from this process, or over a mapping of partition ids
    to Publishers (see rs_spark.spark.source.read_stream)."""
    from .spark.source.read_stream import read_stream as _read_stream

    return _read_stream(spark, publisher, schema, **options)


def write_stream(df: Any, subscriber: Any, **options: Any) -> Any:
    """Start ``df.writeStream.format("reactive")`` into ``subscriber`` (see rs_spark.spark.sink.write_stream)."""
    from .spark.sink.write_stream import write_stream as _write_stream

    return _write_stream(df, subscriber, **options)


def serve_sink(subscriber: Any, **options: Any) -> Any:
    """Serve ``subscriber`` for the sink's ``endpoint`` option (see rs_spark.delivery)."""
    from .delivery import serve_sink as _serve_sink

    return _serve_sink(subscriber, **options)


def sink_state(query: Any) -> "SinkState":
    """The sink state (``hub``, ``options``, ``run_id``) of a query started with :func:`write_stream` in this
    process, from any handle of it (``spark.streams.get(id)``, Spark Connect) or its id; for its current run, or
    its last once it ended (see rs_spark.spark.sink.state)."""
    from .spark.sink.state import sink_state as _sink_state

    return _sink_state(query)


def stop_served() -> int:
    """Stop the endpoints :func:`read_stream` (and ``rs_spark.spark.realtime.read_stream``) started in this
    process; returns how many."""
    from .spark.realtime import stop_served as _stop_realtime
    from .spark.source.read_stream import stop_served as _stop_served

    return _stop_served() + _stop_realtime()


__all__ = ["__version__", "read_stream", "write_stream", "serve_sink", "sink_state", "stop_served"]
