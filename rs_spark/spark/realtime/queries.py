"""Spark's real-time mode (``trigger(realTime=...)``) with Reactive Streams on both ends.

Only JVM sources that implement Spark's real-time interfaces, and allow-listed sinks, take part in
real-time mode; Python data sources cannot. The shim jar therefore carries a JVM source,
``format("reactive-rt")``, and a JVM ``ForeachWriter`` for the sink (``writeStream.foreach`` is on
Spark's allowlist). This module sets both up from Python::

    from rs_spark.spark import jvm, realtime
    spark = jvm.configure(SparkSession.builder).getOrCreate()     # the shim jar on spark.jars
    df = realtime.read_stream(spark, publisher, schema="id LONG, t DOUBLE")
    q = realtime.write_stream(df, subscriber, trigger="5 minutes", checkpoint="/chk/q1")

The same DataFrame runs in micro-batches too (``trigger={"processingTime": "1 second"}``). See
docs/realtime.md for when to choose real-time mode, its limits and every option.
"""

from __future__ import annotations

import logging
import secrets
import ssl as _ssl
import tempfile
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from ...net.protocol.tls_files import TlsFiles
from ...streams.types import Publisher, Subscriber
from ..internals import wrap_query
from ..options import OptionValue, lookup
from ..served import keep, stop_served
from ..session import check_reachable

if TYPE_CHECKING:
    import pyarrow as pa

    from ...net.zero_loss.retention import Retention

log = logging.getLogger("rs_spark.realtime")

SOURCE = "reactive-rt"
"""The real-time source's name (``reactive`` stays the Python source: a JVM source of the same name
would take precedence over it whenever the shim jar is on the classpath)."""


def read_stream(
    spark: SparkSession,
    publisher: Publisher[Any] | None = None,
    schema: str | StructType | pa.Schema | None = None,
    *,
    options: Mapping[str, OptionValue] | None = None,
    endpoint: str | None = None,
    jvm_publisher: str | None = None,
    bind: str = "tcp://127.0.0.1:0",
    retention: Retention | None = None,
    ssl: _ssl.SSLContext | None = None,
) -> DataFrame:
    """``spark.readStream.format("reactive-rt")`` over exactly one of: ``publisher`` (a Python
    Publisher of pyarrow RecordBatches or of dicts/tuples, served here on ``bind`` with resumption:
    ``retention`` is its :class:`rs_spark.net.Retention`), ``endpoint`` (the address of a Publisher
    served by rs_spark.net with codec arrow) or ``jvm_publisher`` (``"com.example.Feeds#quotes"``).
    ``schema``: DDL, StructType or pyarrow.Schema (required). ``options``: source options
    (``{"maxInFlight": 16}``, ...). ``ssl``: a server
    ``ssl.SSLContext`` to serve ``publisher`` on ``tls://`` (give option ``tlsCaFile`` too, unless the
    JVM's default trust store trusts its certificate)."""
    from ..jvm import jvm

    if sum(x is not None for x in (publisher, endpoint, jvm_publisher)) != 1:
        raise ValueError(
            "realtime.read_stream() needs exactly one of publisher= (a Python Publisher, served here), "
            "endpoint= (an rs_spark.net address) or jvm_publisher= ('com.example.Feeds#method')"
        )
    if ssl is not None and publisher is None:
        raise ValueError(
            "realtime.read_stream(ssl=...) serves publisher= over tls://; an endpoint= is served by its own "
            "server (give its tls:// address and option tlsCaFile), a jvm_publisher= is read in the JVM"
        )
    struct = _struct(schema)
    jvm(spark)  # the shim (and so format "reactive-rt") on the driver's classpath, or a clear error
    reader = spark.readStream.format(SOURCE).schema(struct)
    if publisher is not None:
        endpoint = _serve(spark, publisher, struct, bind, retention, ssl)
    if endpoint is not None:
        reader = reader.option("endpoint", endpoint)
    if jvm_publisher is not None:
        reader = reader.option("jvmPublisher", jvm_publisher)
    for k, v in (options or {}).items():
        reader = reader.option(k, str(v).lower() if isinstance(v, bool) else str(v))
    return reader.load()


def _struct(schema: Any) -> Any:
    from pyspark.sql.types import StructType, _parse_datatype_string

    if schema is None:
        raise ValueError("realtime.read_stream() needs schema= (DDL, StructType or pyarrow.Schema)")
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        return _parse_datatype_string(schema)
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _serve(spark: SparkSession, publisher: Any, struct: Any, bind: str, retention: Any, ssl: Any) -> str:
    """Serve ``publisher`` (as Arrow record batches) on ``bind`` with a random token (TLS with ``ssl``)."""
    from ...arrow.chunking import chunk_rows
    from ...net import serve
    from ...net.protocol.address import parse
    from ...net.zero_loss.retention import Retention
    from ..values import served_batches

    if not callable(getattr(publisher, "subscribe", None)):
        raise TypeError(f"realtime.read_stream(publisher=...) needs a Publisher, got {publisher!r}")
    check_reachable(spark, bind, "realtime.read_stream")
    token = secrets.token_urlsafe(24)
    retention = retention if retention is not None else Retention()
    # the JVM reader takes rows by credit (the endpoint cuts a batch to it): only the retention bound
    batches = served_batches(publisher, struct, size=chunk_rows(retention.max_records))
    server = serve(batches, name=f"rs-rt-{uuid.uuid4().hex[:12]}", bind=bind, token=token, ssl=ssl, retention=retention)
    keep(server)
    return parse(server.address).with_token(token).with_codec("arrow").format(with_token=True)


def as_record_batches(publisher: Any, struct: Any) -> Any:
    """``publisher`` with each element as a pyarrow RecordBatch of ``struct`` (a Spark StructType):
    what to serve with :func:`rs_spark.net.serve` for ``format("reactive-rt")``. RecordBatches pass
    through (conformed to ``struct``); dicts, tuples, Rows and dataclasses are converted with pyspark's
    rules (:mod:`rs_spark.spark.values`) in chunks sized by demand (FAILFAST: a malformed element fails
    the stream, naming its offset and field)."""
    from ..values import served_batches

    return served_batches(publisher, struct)


def write_stream(
    df: DataFrame,
    subscriber: Subscriber[Any] | str,
    *,
    options: Mapping[str, OptionValue] | None = None,
    trigger: str | dict | None = "5 minutes",
    checkpoint: str | None = None,
    elements: str = "dicts",
    ledger: str | None = None,
    query_name: str | None = None,
    output_mode: str = "update",
    bind: str = "tcp://127.0.0.1:0",
    ssl: _ssl.SSLContext | None = None,
) -> StreamingQuery:
    """Start ``df`` into ``subscriber`` through the shim's real-time ForeachWriter; return the query.

    ``subscriber``: a Subscriber in this process (served here by a delivery hub, subscribed once,
    now) or the address of one served by :func:`rs_spark.serve_sink`. ``trigger``: the real-time
    batch duration (``"5 minutes"``; Spark's minimum is ``spark.sql.streaming.realTimeMode.minBatchDuration``,
    5 s by default), or keyword arguments of ``DataStreamWriter.trigger`` for another trigger
    (``{"processingTime": "0 seconds"}``), or None (Spark's default). ``elements``, ``ledger``,
    ``ssl``: as for :func:`rs_spark.serve_sink` (with ``ssl``, give option ``tlsCaFile`` too). ``options``: sink
    options (``maxRowsPerPayload``, ``maxQueuedRows``, ``ackTimeout``, ``connectTimeout``, the TLS options).
    When the query stops the Subscriber gets ``on_complete``; when it fails, ``on_error``."""
    from ...delivery import DeliveryHub
    from ..jvm import jvm
    from ..sink.query_end import on_query_end
    from ..sink.state import run_started

    sink_options = dict(options or {})
    spark = df.sparkSession
    j = jvm(spark)
    hub: DeliveryHub | None = None
    if isinstance(subscriber, str):
        endpoint = subscriber
    else:
        hub = DeliveryHub(subscriber, elements=elements, ledger=ledger)
        hub.defer_abort = True  # the query's end decides: stop -> on_complete, failure -> on_error
        check_reachable(spark, bind, "realtime.write_stream")
        endpoint = hub.serve(bind, ssl=ssl)
    try:
        w = _jvm_writer(df, j, endpoint, sink_options, trigger, checkpoint, query_name, output_mode)
        query = wrap_query(spark, w.start())
    except BaseException as exc:
        if hub is not None:
            hub.finish(exc if isinstance(exc, Exception) else RuntimeError(f"the query did not start: {exc!r}"))
            hub.stop()
        raise
    on_query_end(spark, query, _QueryEnd(run_started(query, hub, sink_options), endpoint))
    return query


def _jvm_writer(
    df: DataFrame,
    j: Any,
    endpoint: str,
    options: dict[str, Any],
    trigger: str | dict | None,
    checkpoint: str | None,
    query_name: str | None,
    output_mode: str,
) -> Any:
    """The JVM ``DataStreamWriter`` of ``df`` into the shim's ForeachWriter, every setting applied."""
    opts = j.java.util.HashMap()
    for k, v in options.items():
        opts.put(k, str(v))
    writer = j.rsspark.rt.ReactiveSinkWriter.create(endpoint, df.schema.json(), opts)
    w = df._jdf.writeStream().foreach(writer).outputMode(output_mode)
    if trigger is not None:
        w = w.trigger(jvm_trigger(j, trigger))
    w = w.option("checkpointLocation", checkpoint or tempfile.mkdtemp(prefix="rs-rt-checkpoint-"))
    if query_name:
        w = w.queryName(query_name)
    return w


def jvm_trigger(j: Any, trigger: str | dict) -> Any:
    """The JVM Trigger for ``trigger``: a real-time batch duration, or DataStreamWriter.trigger's
    keyword arguments (realTime, processingTime, availableNow, once)."""
    t = j.org.apache.spark.sql.streaming.Trigger
    spec = {"realTime": trigger} if isinstance(trigger, str) else dict(trigger)
    if len(spec) != 1:
        raise ValueError(f"trigger={trigger!r}: give one of realTime, processingTime, availableNow or once")
    ((kind, value),) = spec.items()
    if kind == "realTime":
        return t.RealTime(str(value))
    if kind == "processingTime":
        return t.ProcessingTime(str(value))
    if kind == "availableNow" and value:
        return t.AvailableNow()
    if kind == "once" and value:
        return t.Once()
    raise ValueError(
        f"trigger={trigger!r}: use realTime='5 minutes', processingTime='1 second', availableNow=True or once=True"
    )


class _QueryEnd:
    """When the query ends: the Subscriber served here gets on_complete / on_error (the hub stops);
    a remote one gets an ``end`` control message."""

    def __init__(self, state: Any, endpoint: str) -> None:
        self._state = state
        self._hub = state.hub
        self._endpoint = endpoint

    def __call__(self, error: str | None) -> None:
        from ...delivery import QueryFailed, send_control
        from ..sink.state import run_ended

        run_ended(self._state)
        err = QueryFailed(f"the query failed: {error.splitlines()[0] if error else ''}") if error else None
        if self._hub is not None:
            self._hub.finish(err)
            self._hub.stop()
        else:
            tls = TlsFiles.from_options(lookup(self._state.options))  # how the remote hub is trusted
            send_control(self._endpoint, {"op": "end", "error": None if err is None else str(err)}, tls=tls)


__all__ = ["SOURCE", "read_stream", "write_stream", "stop_served", "as_record_batches", "jvm_trigger"]
