"""``write_stream``: start a query into a Subscriber that lives in this (notebook) process, or one
served elsewhere, and map the query's end onto it."""

from __future__ import annotations

import logging
import ssl as _ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from ...delivery import DeliveryHub, QueryFailed
from ...streams.types import Subscriber
from ..options import OptionError, OptionValue, lookup
from ..session import check_reachable, is_local
from .each_batch import Route, deliver_each_batch, route
from .options import keep_window

log = logging.getLogger("rs_spark.sink")


def write_stream(
    df: DataFrame,
    subscriber: Subscriber[Any] | str,
    *,
    options: Mapping[str, OptionValue] | None = None,
    elements: str = "dicts",
    ledger: str | None = None,
    checkpoint: str | None = None,
    trigger: dict | None = None,
    query_name: str | None = None,
    output_mode: str | None = None,
    end_on_stop: bool = True,
    bind: str = "tcp://127.0.0.1:0",
    ssl: _ssl.SSLContext | None = None,
) -> StreamingQuery:
    """Start ``df.writeStream.format("reactive")`` (``foreachBatch`` in update mode) into ``subscriber`` and
    return the StreamingQuery.

    ``subscriber``: a Subscriber in this process (served on 127.0.0.1 for the query's commits;
    subscribed once, now) or the address of one served elsewhere (:func:`rs_spark.serve_sink`).
    When the query stops the Subscriber gets ``on_complete``; when it fails, ``on_error`` with
    the cause (``end_on_stop=False`` leaves a remote Subscriber open for a restarted query).
    ``elements``: ``dicts``, ``rows``, ``tuples`` or ``batches`` (RecordBatches; demand counts
    batches). ``checkpoint``: checkpointLocation (with ``ledger=``: exactly once across restarts); ``trigger``:
    keyword arguments of ``DataStreamWriter.trigger``, e.g. ``{"processingTime": "1 second"}``;
    ``output_mode``: ``append`` (default), ``update`` or ``complete``; Spark refuses ``update`` for Python data
    source sinks, so an ``update`` query writes through ``foreachBatch`` (:mod:`rs_spark.spark.sink.each_batch`:
    each micro-batch collected in the driver, then delivered by the same hub and ledger, as exactly once and
    paced; options ``stagingLocation`` and ``inlineMaxBytes`` do not apply). Each element's micro-batch is the
    subscription's ``batch_id``: append adds rows, update sends each changed row again (upsert it by the
    grouping key), complete sends the whole result (replace what you hold).
    ``bind``: where the query's commits reach a Subscriber in this process (see :func:`read_stream`);
    ``ssl``: a server ``ssl.SSLContext`` to serve it on ``tls://`` (give option ``tlsCaFile`` too).
    ``options``: the sink's options, e.g. ``{"commitTimeout": "30s"}``; with ``keepSubscriberOnAbort`` a
    failed query leaves the Subscriber waiting for the query restarted from its checkpoint (pass it again). In
    local mode without option ``stagingLocation``, partitions are staged in a temporary folder of ours and
    ``inlineMaxBytes`` defaults to ``1m``, not 64m.
    :func:`rs_spark.sink_state` finds the run's hub from any handle of the query.
    """
    from ..session import register
    from .query_end import on_query_end
    from .run_end import RunEnd, take_kept
    from .state import run_started

    each_batch = route(output_mode) is Route.EACH_BATCH  # an unknown mode is refused before anything starts
    spark = df.sparkSession
    register(spark)
    requested = dict(options or {})
    keep = keep_window(lookup(requested).get("keepsubscriberonabort"))
    checkpoint, temporary = _checkpoint_or_temporary(spark, checkpoint, keep)
    resumed = None if isinstance(subscriber, str) else take_kept(subscriber, checkpoint)
    hub, endpoint = resumed or _serve(spark, subscriber, elements, ledger, bind, ssl)
    sink_options, staging = (requested, None) if each_batch else _with_local_staging(spark, requested)
    query = _start(lambda: _writer(df, endpoint, sink_options, checkpoint, trigger, query_name, output_mode), hub)
    state = run_started(query, hub, sink_options)
    end = RunEnd(
        state,
        endpoint,
        subscriber,
        end_on_stop=end_on_stop,
        keep=keep,
        checkpoint=checkpoint,
        folders=[staging, temporary],
    )
    on_query_end(spark, query, end)
    return query


def _serve(
    spark: Any, subscriber: Any, elements: str, ledger: str | None, bind: str, ssl: _ssl.SSLContext | None
) -> tuple[DeliveryHub | None, str]:
    """The hub serving ``subscriber`` in this process (None for the address of one served elsewhere)
    and the endpoint the sink's commits deliver to."""
    if isinstance(subscriber, str):
        return None, subscriber
    hub = DeliveryHub(subscriber, elements=elements, ledger=ledger)
    hub.defer_abort = True  # the query's end (watched) decides: stop -> complete, failure -> error
    check_reachable(spark, bind, "write_stream")
    return hub, hub.serve(bind, ssl=ssl)


def _with_local_staging(spark: Any, options: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """In local mode (and no stagingLocation given) stage in a temporary folder of ours, returned."""
    if any(k.lower() == "staginglocation" for k in options) or not is_local(spark):
        return options, None
    # Executors share this machine's disk in local mode: staging files beat carrying the batch
    # inside commit messages through the driver JVM (measured: benchmarks/sink.py).
    staging = tempfile.mkdtemp(prefix="rs-sink-staging-")
    return {"stagingLocation": staging, "inlineMaxBytes": "1m", **options}, staging


def _checkpoint_or_temporary(spark: Any, checkpoint: str | None, keep: float | None) -> tuple[str | None, str | None]:
    """``(checkpoint, temporary)``: without a checkpoint (here or in the session's conf), a
    throw-away one of ours, removed when the query ends (like Spark's memory sink)."""
    if checkpoint or spark.conf.get("spark.sql.streaming.checkpointLocation", None):
        return checkpoint, None
    if keep:
        raise OptionError(
            "option keepSubscriberOnAbort keeps the Subscriber for the query restarted from its checkpoint, and "
            "this query has none: pass checkpoint= (or set spark.sql.streaming.checkpointLocation)"
        )
    temporary = tempfile.mkdtemp(prefix="rs-sink-checkpoint-")
    log.warning(
        "write_stream: no checkpoint given; using the temporary %s, so a restarted query starts "
        "over. Exactly once across restarts takes checkpoint=, a source that replays and ledger= "
        "(docs/guarantees.md#exactly-once)",
        temporary,
    )
    return temporary, temporary


def _writer(
    df: DataFrame,
    endpoint: str,
    options: dict[str, Any],
    checkpoint: str | None,
    trigger: dict | None,
    query_name: str | None,
    output_mode: str | None,
) -> Any:
    """The ``DataStreamWriter`` for ``format("reactive")`` (``foreachBatch`` in update mode) with every option
    set."""
    if route(output_mode) is Route.EACH_BATCH:
        w = df.writeStream.foreachBatch(deliver_each_batch(endpoint, options))
    else:
        w = df.writeStream.format("reactive").option("endpoint", endpoint)
        for k, v in options.items():
            w = w.option(k, str(v))
    if checkpoint:
        w = w.option("checkpointLocation", checkpoint)
    if trigger:
        w = w.trigger(**trigger)
    if query_name:
        w = w.queryName(query_name)
    if output_mode:
        w = w.outputMode(output_mode)
    return w


def _start(writer: Callable[[], Any], hub: DeliveryHub | None) -> Any:
    """Build the writer and start the query; if it does not start (a bad option too), the Subscriber served
    here gets on_error with why."""
    try:
        return writer().start()
    except BaseException as exc:
        if hub is not None:
            # Ctrl-C / exit while starting is not the query's failure: the Subscriber is told the
            # query never started, with the interruption as the cause.
            hub.finish(exc if isinstance(exc, Exception) else _not_started(exc))
            hub.stop()
        raise


def _not_started(exc: BaseException) -> QueryFailed:
    failure = QueryFailed(f"the query did not start: write_stream was interrupted ({type(exc).__name__})")
    failure.__cause__ = exc
    return failure


__all__ = ["write_stream"]
