"""An executor's fetch of a partition's planned range, riding out network outages.

``PartitionedStreamReader.read`` calls :func:`fetch_range_for`: a connection that cannot be
opened, is reset or goes silent is tried again from the first row not yet read (capped backoff
with jitter, option ``reconnectBackoff`` / ``reconnectBackoffMax``) for as long as the endpoint
keeps the stream: the query's ``resumeWindow`` (else the default ``Retention.window``, 10 minutes)
plus ``keepaliveTimeout``. The task waits meanwhile instead of failing at the first refused
connection; a refusal (the endpoint no longer keeps the range) ends it at once and ``read``
reports it (``failOnDataLoss``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...net import connect
from ...net.zero_loss.fetch_retry import fetch_riding_outages
from ...net.zero_loss.outage import retry_bound
from .options import SourceOptions


def fetch_range_for(opts: SourceOptions, pid: str, key: str, lo: int, hi: int) -> Iterator[Any]:
    """Rows ``[lo, hi)`` of partition ``pid``'s stream ``key``, fetched from its endpoint (see the module)."""
    stream = connect(opts.endpoints[pid], **opts.client_options()).resumable(key)
    bound = retry_bound(None, opts.resume_window, opts.link.lifetime)
    return fetch_riding_outages(stream, lo, hi, bound=bound, backoff=opts.link.backoff)


__all__ = ["fetch_range_for"]
