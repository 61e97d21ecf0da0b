"""rs_spark: Reactive Streams for PySpark Structured Streaming.

``rs_spark.streams`` is the pure-Python Reactive Streams core; ``rs_spark.tck`` checks any
Publisher, Subscriber or Processor against the spec rule by rule; ``rs_spark.net`` serves them
across processes; ``rs_spark.spark`` is the ``reactive`` source and sink (and
``rs_spark.spark.realtime``, Spark's real-time mode). Each is reachable after ``import rs_spark``
alone (``rs_spark.spark.register(spark)``), imported when first named: ``import rs_spark`` itself
imports no pyspark. The helpers here serve a Publisher or a
Subscriber in this process to a query: :func:`read_stream`, :func:`write_stream`,
:func:`serve_sink`, :func:`stop_served`; :func:`sink_state` finds what rs_spark holds for a query.
"""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `import rs_spark` needs no pyspark: rs_spark.net and rs_spark.streams run without Spark
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructType

    # what the module __getattr__ below makes reachable at run time, for type checkers and IDEs
    from . import arrow, delivery, jvm, net, spark, streams, tck  # noqa: F401
    from .delivery import SinkEndpoint
    from .net.zero_loss.retention import Retention
    from .spark.options import OptionValue
    from .spark.sink.state import SinkState
    from .streams.types import Publisher, Subscriber

from ._version import __version__


def read_stream(
    spark: SparkSession,
    publisher: Publisher[Any] | Mapping[str, Publisher[Any]],
    schema: str | StructType | None = None,
    *,
    options: Mapping[str, OptionValue] | None = None,
    bind: str = "tcp://127.0.0.1:0",
    retention: Retention | None = None,
    codec: str = "arrow",
    ssl: _ssl.SSLContext | None = None,
) -> DataFrame:
    """A streaming DataFrame over ``publisher`` from this process, or over a mapping of partition ids
    to Publishers; ``options`` are the source's (see rs_spark.spark.source.read_stream); ``ssl``: a
    server ``ssl.SSLContext``, served on ``tls://`` (the query then gives option ``tlsCaFile``)."""
    from .spark.source.read_stream import read_stream as _read_stream

    return _read_stream(
        spark,
        publisher,
        schema,
        options=options,
        bind=bind,
        retention=retention,
        codec=codec,
        ssl=ssl,
    )


def write_stream(
    df: DataFrame,
    subscriber: Subscriber[Any] | str,
    *,
    options: Mapping[str, OptionValue] | None = None,
    elements: str = "dicts",
    ledger: str | None = None,
    checkpoint: str | None = None,
    trigger: dict[str, Any] | None = None,
    query_name: str | None = None,
    output_mode: str | None = None,
    end_on_stop: bool = True,
    bind: str = "tcp://127.0.0.1:0",
    ssl: _ssl.SSLContext | None = None,
) -> StreamingQuery:
    """Start ``df.writeStream.format("reactive")`` into ``subscriber`` (``foreachBatch`` for ``output_mode="update"``,
    which Spark refuses for Python data source sinks: same hub, ledger and guarantees); ``options`` are the sink's
    (see rs_spark.spark.sink.write_stream)."""
    from .spark.sink.write_stream import write_stream as _write_stream

    return _write_stream(
        df,
        subscriber,
        options=options,
        elements=elements,
        ledger=ledger,
        checkpoint=checkpoint,
        trigger=trigger,
        query_name=query_name,
        output_mode=output_mode,
        end_on_stop=end_on_stop,
        bind=bind,
        ssl=ssl,
    )


def serve_sink(
    subscriber: Subscriber[Any],
    *,
    elements: str = "dicts",
    bind: str = "tcp://127.0.0.1:0",
    token: str | None = None,
    ledger: str | None = None,
    name: str | None = None,
    ssl: _ssl.SSLContext | None = None,
) -> SinkEndpoint:
    """Serve ``subscriber`` for the sink's ``endpoint`` option (see rs_spark.delivery); ``ssl``: a
    server ``ssl.SSLContext``, served on ``tls://`` (the query then gives option ``tlsCaFile``)."""
    from .delivery import serve_sink as _serve_sink

    if elements == "rows":  # pyspark Rows are made by the Spark layer, registered when it is imported
        from . import spark as _spark  # noqa: F401

    return _serve_sink(subscriber, elements=elements, bind=bind, token=token, ledger=ledger, name=name, ssl=ssl)


def sink_state(query: Any) -> SinkState:
    """The sink state (``hub``, ``options``, ``run_id``) of a query started with :func:`write_stream` in this
    process, from any handle of it (``spark.streams.get(id)``, Spark Connect) or its id; for its current run, or
    its last once it ended (see rs_spark.spark.sink.state)."""
    from .spark.sink.state import sink_state as _sink_state

    return _sink_state(query)


def stop_served() -> int:
    """Stop the endpoints :func:`read_stream` (and ``rs_spark.spark.realtime.read_stream``) started in this
    process; returns how many."""
    from .spark.served import stop_served as _stop_served

    return _stop_served()


__all__ = ["__version__", "read_stream", "write_stream", "serve_sink", "sink_state", "stop_served"]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
