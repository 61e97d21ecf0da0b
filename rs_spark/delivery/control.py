"""The hub's control endpoint: ``abort`` and ``end`` messages from Spark's side, as JSON."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from ..streams.demand import MAX_DEMAND
from ..streams.errors import report_dropped
from ..streams.types import Subscription
from .errors import QueryFailed

if TYPE_CHECKING:  # not a circle: net is imported only when send_control runs (importing delivery stays light)
    from ..net.protocol.tls_files import TlsFiles

log = logging.getLogger("rs_spark.sink")


class ControlTarget(Protocol):
    """What the control endpoint needs of the hub (:class:`rs_spark.delivery.DeliveryHub` is one): its name
    for the log and the query's three ends, so this module does not import the hub."""

    @property
    def name(self) -> str: ...

    def finish(self, error: BaseException | None = None) -> None: ...

    def abort(self, batch_id: int, reason: str, keep: float | None = None) -> None: ...

    def keep(self, error: BaseException, window: float) -> bool: ...


class ControlSubscriber:
    """JSON control messages: ``{"op": "end", "error": null | "text"}``, ``{"op": "abort", "batch_id",
    "reason", "keep": null | seconds}`` and ``{"op": "keep", "error": "text", "window": seconds}`` (the query
    failed; keep the Subscriber for a restarted run: :meth:`DeliveryHub.keep`)."""

    def __init__(self, hub: ControlTarget) -> None:
        self._hub = hub

    def on_subscribe(self, s: Subscription) -> None:
        s.request(MAX_DEMAND)

    def on_next(self, msg: Any) -> None:
        try:
            op = msg.get("op")
            if op == "end":
                err = msg.get("error")
                self._hub.finish(QueryFailed(err) if err else None)
            elif op == "abort":
                keep = msg.get("keep")
                self._hub.abort(int(msg.get("batch_id", -1)), str(msg.get("reason", "")), float(keep) if keep else None)
            elif op == "keep":
                self._hub.keep(QueryFailed(str(msg.get("error", "the query failed"))), float(msg["window"]))
            else:
                log.warning("sink '%s': unknown control message %r ignored", self._hub.name, msg)
        except Exception as exc:  # a control message must never break the hub
            report_dropped(exc, f"sink '{self._hub.name}': bad control message {msg!r}")

    def on_error(self, error: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


def send_control(endpoint: str, message: dict[str, Any], timeout: float = 10.0, *, tls: TlsFiles | None = None) -> None:
    """Send one control message to the hub at ``endpoint`` (an address from :func:`serve_sink`);
    ``tls``: how a tls:// hub is trusted (the sink's TLS options)."""
    from ..net import connect_subscriber
    from ..net.protocol.address import parse
    from ..streams import just

    a = parse(endpoint)
    addr = a.with_name(f"{a.name}.control").with_codec("json").format(with_token=True)
    sub = connect_subscriber(addr, codec="json", tls=tls)
    just(message).subscribe(sub)
    sub.wait(timeout)


__all__ = ["ControlSubscriber", "ControlTarget", "send_control"]
