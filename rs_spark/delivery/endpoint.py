"""``serve_sink``: a Subscriber served for the sink's ``endpoint`` option."""

from __future__ import annotations

import ssl as _ssl
from typing import Any

from ..streams.types import Subscriber
from .hub import DeliveryHub


class SinkEndpoint:
    """A served Subscriber for the ``reactive`` sink: give :attr:`address` to option ``endpoint``."""

    def __init__(self, hub: DeliveryHub, address: str) -> None:
        self.hub = hub
        self.address = address

    def finish(self, error: BaseException | None = None) -> None:
        """The query ended: the Subscriber gets ``on_complete`` (``on_error(error)``) after what was
        delivered (:meth:`DeliveryHub.finish`)."""
        self.hub.finish(error)

    def stop(self) -> None:
        """Stop serving; the Subscriber is not signalled (call :meth:`finish` first for that)."""
        self.hub.stop()

    def __enter__(self) -> SinkEndpoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<SinkEndpoint {self.address.split('?')[0]}>"


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
    """Serve ``subscriber`` for ``df.writeStream.format("reactive").option("endpoint", ep.address)``.

    The Subscriber is subscribed once, now, and receives the rows of every micro-batch of every
    query run that writes to the endpoint, in batchId order, paced by its demand. ``elements``:
    ``dicts`` (default), ``rows`` (pyspark Rows), ``tuples`` or ``batches`` (pyarrow RecordBatches,
    demand counts batches). ``ledger``: a file that keeps the exactly-once ledger across restarts
    of this process. The query's end reaches the Subscriber when the query is started with
    :func:`rs_spark.write_stream` (or :meth:`finish` is called).
    ``ssl``: a server ``ssl.SSLContext`` with its certificate loaded: the hub is served on
    ``tls://`` (as :func:`rs_spark.net.serve`), and the query gives option ``tlsCaFile`` (the
    certificate, or the CA that signed it) to trust it.
    """
    hub = DeliveryHub(subscriber, elements=elements, ledger=ledger, name=name)
    return SinkEndpoint(hub, hub.serve(bind, token, ssl=ssl))


__all__ = ["SinkEndpoint", "serve_sink"]
