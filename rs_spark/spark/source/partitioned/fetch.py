"""The executor's side of the partitioned reader: a planned position range fetched from its endpoint.

A connection that cannot be opened, is reset or goes silent is tried again from the first row not
yet read (capped backoff with jitter, options ``reconnectBackoff`` / ``reconnectBackoffMax``) for as
long as the endpoint keeps the stream: the query's ``resumeWindow`` (else the default
``Retention.window``, 10 minutes) plus ``keepaliveTimeout``. The task waits meanwhile instead of
failing at the first refused connection; a refusal (the endpoint no longer keeps the range) ends it
at once and is reported (``failOnDataLoss``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from ....net import connect
from ....net.protocol.address import redact
from ....net.protocol.errors import Refused
from ....net.zero_loss.fetch_retry import fetch_riding_outages
from ....net.zero_loss.outage import retry_bound
from ..data_loss import report_data_loss
from ..executor_rows import converted, converter_for
from ..options import SourceOptions


class EndpointRange(InputPartition):
    """Rows ``[lo, hi)`` of partition ``pid``'s stream ``key``: an executor fetches them from the endpoint."""

    def __init__(self, pid: str, key: str, lo: int, hi: int) -> None:
        super().__init__(f"{pid}[{lo}:{hi}]")
        self.pid, self.key, self.lo, self.hi = pid, key, lo, hi


class _Counted:
    """The fetched elements, counting their rows; a refusal by the endpoint ends them (``why`` says it)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items
        self.rows = 0
        self.why = ""

    def __iter__(self) -> Iterator[Any]:
        try:
            for item in self._items:
                self.rows += item.num_rows if isinstance(item, (pa.RecordBatch, pa.Table)) else 1
                yield item
        except Refused as exc:  # the endpoint refused the range: it no longer keeps (all of) it
            self.why = f": {exc}"


def read_range(opts: SourceOptions, schema_json: str, p: EndpointRange) -> Iterator[pa.RecordBatch]:
    """The rows of ``p``, converted and validated here; rows the endpoint no longer keeps are
    reported (failOnDataLoss decides)."""
    fetched = _Counted(fetch_range_for(opts, p.pid, p.key, p.lo, p.hi))
    yield from converted(converter_for(opts, schema_json, p.pid), fetched, p.lo)
    if fetched.rows < p.hi - p.lo:
        _lost(opts, p, p.lo + fetched.rows, fetched.why)


def fetch_range_for(opts: SourceOptions, pid: str, key: str, lo: int, hi: int) -> Iterator[Any]:
    """Rows ``[lo, hi)`` of partition ``pid``'s stream ``key``, fetched from its endpoint, riding out
    outages (see the module)."""
    stream = connect(opts.endpoints[pid], **opts.client_options()).resumable(key)
    bound = retry_bound(None, opts.resume_window, opts.link.lifetime)
    return fetch_riding_outages(stream, lo, hi, bound=bound, backoff=opts.link.backoff)


def _lost(opts: SourceOptions, p: EndpointRange, at: int, why: str) -> None:
    """Rows of a planned range the endpoint no longer keeps: failOnDataLoss decides, as on the
    driver (and as Kafka's executor-side consumer: fail, or warn and skip them)."""
    report_data_loss(
        opts,
        f"format('reactive'): partition {p.pid!r} ({redact(opts.endpoints[p.pid])}) no longer keeps "
        f"positions [{at}, {p.hi}) of stream {p.key}, planned in a micro-batch{why}",
        "Restart queries within the endpoint's resume window and keep its process running (or serve with "
        "Retention(spill=...)). ",
        f"skip these {p.hi - at} rows (they are lost)",
    )


__all__ = ["EndpointRange", "fetch_range_for", "read_range"]
