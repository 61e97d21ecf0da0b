"""``write_stream``: start a query into a Subscriber that lives in this (notebook) process, or one
served elsewhere, and map the query's end onto it."""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from typing import Any

from pyspark.sql import DataFrame

from ..session import check_reachable, is_local

log = logging.getLogger("rs_spark.sink")


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
    from ...delivery import DeliveryHub, QueryFailed, send_control
    from ..session import register
    from .query_end import on_query_end

    register(df.sparkSession)
    hub: DeliveryHub | None = None
    if isinstance(subscriber, str):
        endpoint = subscriber
    else:
        hub = DeliveryHub(subscriber, elements=elements, ledger=ledger)
        hub.defer_abort = True  # the query's end (watched below) decides: stop -> complete, failure -> error
        check_reachable(df.sparkSession, bind, "write_stream")
        endpoint = hub.serve(bind)
    staging: str | None = None
    temporary: str | None = None  # a throw-away checkpoint of ours, removed when the query ends
    if not any(k.lower() == "staginglocation" for k in options) and is_local(df.sparkSession):
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


def _cause(text: str) -> str:
    """The most specific exception line of a query's failure text (Python traceback's last line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    specific = [ln for ln in lines if _EXC_LINE.match(ln) and not ln.startswith(_GENERIC)]
    if specific:
        return specific[-1].split(" SQLSTATE:")[0]
    return lines[0] if lines else text


__all__ = ["write_stream"]
