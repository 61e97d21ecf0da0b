"""What the end of a run does to its Subscriber: ``on_complete`` when the query stops, ``on_error`` when it
fails, or (option ``keepSubscriberOnAbort``) after a failure the Subscriber is kept, its hub still served, for
the query restarted from its checkpoint: :func:`rs_spark.write_stream` with the same Subscriber takes it up again
(:func:`take_kept`), and Spark's replay of the failed batch ids is deduplicated by the hub's ledger."""

from __future__ import annotations

import re
import shutil
import threading
from typing import Any

from ...delivery import DeliveryHub, QueryFailed, send_control
from ...net.protocol.tls_files import TlsFiles
from ..options import lookup
from .state import SinkState, run_ended


class _Kept:
    __slots__ = ("hub", "endpoint", "checkpoint", "subscriber")

    def __init__(self, hub: DeliveryHub, endpoint: str, checkpoint: str | None, subscriber: Any) -> None:
        self.hub = hub
        self.endpoint = endpoint
        self.checkpoint = checkpoint
        self.subscriber = subscriber  # held: the key is its id()


_lock = threading.Lock()
_kept: dict[int, _Kept] = {}  # id(subscriber) -> its kept hub, until a restarted run takes it or the window passes


def take_kept(subscriber: Any, checkpoint: str | None) -> tuple[DeliveryHub, str] | None:
    """The hub (and endpoint) keeping ``subscriber`` after its query failed, for the run restarted from
    ``checkpoint``; None when it is not kept. A different checkpoint is refused: its batch ids are not the
    ones the hub's ledger counts."""
    with _lock:
        k = _kept.get(id(subscriber))
        if k is None or k.subscriber is not subscriber:
            return None
        if k.checkpoint != checkpoint:
            raise ValueError(
                f"this Subscriber is kept (option keepSubscriberOnAbort) for the query that failed writing with "
                f"checkpoint {k.checkpoint!r}, not {checkpoint!r}: restart that query from its checkpoint to go "
                "on, or give write_stream a new Subscriber"
            )
        del _kept[id(subscriber)]
    k.hub.take_over_kept()
    return k.hub, k.endpoint


def _forget(subscriber: Any, hub: DeliveryHub) -> None:
    with _lock:
        k = _kept.get(id(subscriber))
        if k is not None and k.hub is hub:
            del _kept[id(subscriber)]
    hub.stop()


class RunEnd:
    """Called once when a run of the query ends (``error``: its failure text): removes our temporary folders
    and ends (or keeps) the Subscriber: served here, through the hub; elsewhere, with a control message."""

    def __init__(
        self,
        state: SinkState,
        endpoint: str,
        subscriber: Any,
        *,
        end_on_stop: bool,
        keep: float | None,
        checkpoint: str | None,
        folders: list[str | None],
    ) -> None:
        self._state = state
        self._endpoint = endpoint
        self._subscriber = subscriber
        self._end_on_stop = end_on_stop
        self._keep = keep
        self._checkpoint = checkpoint
        self._folders = [f for f in folders if f]

    def __call__(self, error: str | None) -> None:
        run_ended(self._state)
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)
        err = QueryFailed(f"the query failed: {cause(error)}") if error else None
        hub = self._state.hub
        if err is not None and self._keep and self._kept(hub, err, self._keep):
            return
        if hub is not None:
            hub.finish(err)
            hub.stop()
        elif self._end_on_stop:
            send_control(self._endpoint, {"op": "end", "error": None if err is None else str(err)}, tls=self._tls())

    def _tls(self) -> TlsFiles | None:
        """How a tls:// hub served elsewhere is trusted: the query's TLS options."""
        return TlsFiles.from_options(lookup(self._state.options))

    def _kept(self, hub: DeliveryHub | None, err: QueryFailed, window: float) -> bool:
        """Keep the Subscriber for a restarted run; False when its hub ended already."""
        if hub is None:
            send_control(self._endpoint, {"op": "keep", "error": str(err), "window": window}, tls=self._tls())
            return True
        sub = self._subscriber
        with _lock:
            _kept[id(sub)] = _Kept(hub, self._endpoint, self._checkpoint, sub)
        if hub.keep(err, window, on_expiry=lambda: _forget(sub, hub)):
            return True
        with _lock:
            _kept.pop(id(sub), None)
        return False


_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Failed|Cancelled|Aborted|Interrupt)\w*): (.+)$")


_GENERIC = ("org.apache.spark", "pyspark.errors", "py4j", "java.")


def cause(text: str) -> str:
    """The most specific exception line of a query's failure text (Python traceback's last line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    specific = [ln for ln in lines if _EXC_LINE.match(ln) and not ln.startswith(_GENERIC)]
    if specific:
        return specific[-1].split(" SQLSTATE:")[0]
    return lines[0] if lines else text


__all__ = ["RunEnd", "take_kept", "cause"]
