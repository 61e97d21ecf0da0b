"""Output mode ``update`` into a Subscriber, through ``foreachBatch``.

Spark refuses ``update`` for every Python data source sink (its ``PythonWriteBuilder`` does not mix in
``SupportsStreamingUpdateAsAppend``; the check runs in the driver JVM at the first micro-batch, before any
code of ours). ``foreachBatch`` takes every output mode, so :func:`rs_spark.write_stream` with
``output_mode="update"`` writes through it: :class:`EachBatchDelivery`, the query's foreachBatch function,
collects each micro-batch as Arrow where the function runs (the driver; on Spark Connect, the server's Python
worker for it) and sends it to the same delivery hub, over the same commit channel, as the ``format("reactive")``
commit (:func:`.writer.deliver_batches`): batchId order, the Subscriber's demand pacing the query, the hub's
ledger keeping each row to one delivery across restarts, and the end mapping are that path's.

What it costs against ``format("reactive")``: the whole micro-batch is held in the driver at once (collected,
bounded by ``spark.driver.maxResultSize``) where that path streams it from its staging, and its rows pass
through the driver JVM (measured: benchmarks/sink_update.py).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..options import OptionValue
from .options import SinkOptions
from .writer import deliver_batches

RECORD_BATCH_ROWS = 65_536
"""Rows per record batch sent to the hub (the hub holds at most one beyond the Subscriber's demand)."""

OUTPUT_MODES = ("append", "update", "complete")


class Route(enum.Enum):
    """How :func:`rs_spark.write_stream` writes a query of an output mode."""

    FORMAT = "format"  # writeStream.format("reactive"): executors stage, the commit delivers
    EACH_BATCH = "foreachBatch"  # foreachBatch(EachBatchDelivery): collected in the driver, then delivered


def route(output_mode: str | None) -> Route:
    """The route for ``output_mode`` (None: Spark's default, append); an unknown mode is refused."""
    mode = (output_mode or "append").strip().lower()
    if mode not in OUTPUT_MODES:
        raise ValueError(f"output_mode={output_mode!r}: use one of {', '.join(OUTPUT_MODES)}")
    return Route.EACH_BATCH if mode == "update" else Route.FORMAT


class EachBatchDelivery:
    """A ``foreachBatch`` function delivering each micro-batch to the hub at ``opts.endpoint``, exactly once
    by the hub's ledger (a batch Spark runs again after a restart is acknowledged as a duplicate)."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        table: pa.Table = batch_df.toArrow()
        deliver_batches(lambda: table.to_batches(max_chunksize=RECORD_BATCH_ROWS), batch_id, table.num_rows, self.opts)

    def __repr__(self) -> str:
        return f"EachBatchDelivery({self.opts!r})"


def deliver_each_batch(endpoint: str, options: Mapping[str, OptionValue] | None = None) -> EachBatchDelivery:
    """The ``foreachBatch`` function that delivers a query's micro-batches to the Subscriber served at
    ``endpoint`` (:func:`rs_spark.serve_sink`), in any output mode; ``options``: the sink's (``commitTimeout``,
    ``reconnectTimeout``, ``tls*``, ...), checked now. For plain PySpark in update mode::

        df.writeStream.foreachBatch(deliver_each_batch(ep.address)).outputMode("update").start()

    (the Subscriber then ends when you call ``ep.finish()``, as with option ``endpoint``)."""
    return EachBatchDelivery(SinkOptions.parse({**dict(options or {}), "endpoint": endpoint}))


__all__ = ["EachBatchDelivery", "deliver_each_batch", "route", "Route", "OUTPUT_MODES", "RECORD_BATCH_ROWS"]
