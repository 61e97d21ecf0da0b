"""``read_stream``: a streaming DataFrame over a Publisher that lives in this (notebook) process.

Spark never runs a data source in the user's process (its reader lives in a separate Python
process on the driver), so the Publisher is served on a loopback endpoint
(:func:`rs_spark.net.serve`) and the source reaches it with option ``endpoint``. The endpoint
lives until :func:`stop_served` is called or this process exits.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import threading
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..net.address import parse

log = logging.getLogger("rs_spark.spark.sink")
_served: list[Any] = []  # servers this process started for read_stream; stopped by stop_served()
_lock = threading.Lock()


def read_stream(
    spark: SparkSession, publisher: Any, schema: Any = None, *, bind: str = "tcp://127.0.0.1:0", **options: Any
) -> DataFrame:
    """Serve ``publisher`` on ``bind`` and return ``spark.readStream.format("reactive")`` over it.

    ``schema``: DDL string or StructType (else the publisher's ``schema`` attribute, see
    :func:`rs_spark.arrow.with_schema`). Other keyword arguments become source options, e.g.
    ``maxRecordsPerTrigger=1000``. Publishers of pyarrow RecordBatches cross as Arrow.
    ``bind``: where Spark's reader connects back to this process; the default (loopback)
    serves a driver on this machine. For a Spark Connect server elsewhere, bind an address of
    this machine that the server can reach (``tcp://10.0.0.5:0``); a random token protects it.
    """
    import secrets

    from ..net import serve
    from .session import register

    if publisher is None or not callable(getattr(publisher, "subscribe", None)):
        raise TypeError(f"read_stream() needs a Publisher, got {publisher!r}")
    declared = schema if schema is not None else getattr(publisher, "schema", None)
    if declared is None:
        raise ValueError(
            "read_stream() needs schema= (DDL or StructType) or a publisher with a `schema` "
            "attribute (rs_spark.arrow.with_schema)"
        )
    if not isinstance(declared, str) and type(declared).__module__.startswith("pyarrow"):
        from pyspark.sql.pandas.types import from_arrow_schema

        declared = from_arrow_schema(declared)
    codec = options.pop("codec", "json")
    _check_reachable(spark, bind, "read_stream")
    # A token even on loopback: any local user can connect to 127.0.0.1 (the port is in /proc/net/tcp).
    token = secrets.token_urlsafe(24)
    server = serve(publisher, name=f"rs-{uuid.uuid4().hex[:12]}", bind=bind, token=token)
    with _lock:
        _served.append(server)
    register(spark)
    address = (
        parse(server.address).with_token(token).with_codec(codec if codec != "json" else None).format(with_token=True)
    )
    reader = spark.readStream.format("reactive").schema(declared).option("endpoint", address)
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()


def write_stream(
    df: DataFrame,
    subscriber: Any,
    *,
    elements: str = "dicts",
    ledger: str | None = None,
    checkpoint: str | None = None,
    trigger: dict | None = None,
    query_name: str | None = None,
    output_mode: str | None = None,
    end_on_stop: bool = True,
    bind: str = "tcp://127.0.0.1:0",
    **options: Any,
) -> Any:
    """Start ``df.writeStream.format("reactive")`` into ``subscriber`` and return the StreamingQuery.

    ``subscriber``: a Subscriber in this process (served on 127.0.0.1 for the query's commits;
    subscribed once, now) or the address of one served elsewhere (:func:`rs_spark.serve_sink`).
    When the query stops the Subscriber gets ``on_complete``; when it fails, ``on_error`` with
    the cause (``end_on_stop=False`` leaves a remote Subscriber open for a restarted query).
    ``elements``: ``dicts``, ``rows``, ``tuples`` or ``batches`` (RecordBatches; demand counts
    batches). ``checkpoint``: checkpointLocation (exactly once across restarts); ``trigger``:
    keyword arguments of ``DataStreamWriter.trigger``, e.g. ``{"processingTime": "1 second"}``;
    ``output_mode``: ``append`` (default), ``update`` or ``complete``.
    ``bind``: where the query's commits reach a Subscriber in this process (see :func:`read_stream`).
    Other keyword arguments become sink options.
    """
    from .delivery import DeliveryHub, QueryFailed, send_control
    from .query_end import on_query_end
    from .session import register

    register(df.sparkSession)
    hub: DeliveryHub | None = None
    if isinstance(subscriber, str):
        endpoint = subscriber
    else:
        hub = DeliveryHub(subscriber, elements=elements, ledger=ledger)
        hub.defer_abort = True  # the query's end (watched below) decides: stop -> complete, failure -> error
        _check_reachable(df.sparkSession, bind, "write_stream")
        endpoint = hub.serve(bind)
    staging: str | None = None
    temporary: str | None = None  # a throw-away checkpoint of ours, removed when the query ends
    if not any(k.lower() == "staginglocation" for k in options) and _is_local(df.sparkSession):
        # Executors share this machine's disk in local mode: staging files beat carrying the
        # batch inside commit messages through the driver JVM (measured: benchmarks/sink.py).
        staging = tempfile.mkdtemp(prefix="rs-sink-staging-")
        options = {"stagingLocation": staging, "inlineMaxBytes": "1m", **options}
    w = df.writeStream.format("reactive").option("endpoint", endpoint)
    for k, v in options.items():
        w = w.option(k, str(v))
    if not checkpoint and not df.sparkSession.conf.get("spark.sql.streaming.checkpointLocation", None):
        # Like Spark's memory sink: a throw-away checkpoint, so a quick notebook query just runs.
        checkpoint = temporary = tempfile.mkdtemp(prefix="rs-sink-checkpoint-")
        log.warning(
            "write_stream: no checkpoint given; using the temporary %s, so a restarted query starts "
            "over. Pass checkpoint= for exactly-once delivery across restarts",
            checkpoint,
        )
    if checkpoint:
        w = w.option("checkpointLocation", checkpoint)
    if trigger:
        w = w.trigger(**trigger)
    if query_name:
        w = w.queryName(query_name)
    if output_mode:
        w = w.outputMode(output_mode)
    try:
        query = w.start()
    except BaseException as exc:
        if hub is not None:
            hub.finish(exc)
            hub.stop()
        raise

    def ended(error: str | None) -> None:
        for folder in (staging, temporary):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
        err = QueryFailed(f"the query failed: {_cause(error)}") if error else None
        if hub is not None:
            hub.finish(err)
            hub.stop()
        elif end_on_stop:
            send_control(endpoint, {"op": "end", "error": None if err is None else str(err)})

    on_query_end(df.sparkSession, query, ended)
    setattr(query, "rs_sink_options", dict(options))  # noqa: B010 - attributes pyspark's class does not declare
    setattr(query, "rs_sink", hub)  # noqa: B010 - the hub (None for a remote Subscriber): outstanding, buffered, delivered, ledger
    return query


_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Failed|Cancelled|Aborted|Interrupt)\w*): (.+)$")
_GENERIC = ("org.apache.spark", "pyspark.errors", "py4j", "java.")


def _check_reachable(spark: Any, bind: str, what: str) -> None:
    """Refuse a loopback endpoint that a Spark Connect server on another host could not reach."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return  # a classic session: its driver (and reader, and commits) run on this machine
    try:
        host = str(spark.client.host)
    except Exception:
        return
    if not parse(bind, need_name=False).is_loopback or host in ("localhost", "::1") or host.startswith("127."):
        return
    raise ValueError(
        f"{what}(): this Spark Connect session's server runs at {host}, and it must connect back to the "
        f"Publisher/Subscriber in this process, which is served on {bind} (loopback: not reachable from "
        f"{host}). Pass bind='tcp://<an address of this machine that {host} can reach>:0' (a token is added), "
        "or serve it with rs_spark.net yourself and use option endpoint"
    )


def _is_local(spark: SparkSession) -> bool:
    try:
        return str(spark.sparkContext.master).startswith("local")
    except Exception:  # Spark Connect: no SparkContext here; the server decides
        return False


def _cause(text: str) -> str:
    """The most specific exception line of a query's failure text (Python traceback's last line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    specific = [ln for ln in lines if _EXC_LINE.match(ln) and not ln.startswith(_GENERIC)]
    if specific:
        return specific[-1].split(" SQLSTATE:")[0]
    return lines[0] if lines else text


def stop_served() -> int:
    """Stop every endpoint :func:`read_stream` started in this process; return how many."""
    with _lock:
        servers, _served[:] = list(_served), []
    for s in servers:
        s.stop()
    return len(servers)


__all__ = ["read_stream", "write_stream", "stop_served"]
