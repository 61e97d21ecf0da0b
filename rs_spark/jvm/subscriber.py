"""Python Publisher -> JVM Subscriber.

:class:`JvmSubscriber` is a Python Subscriber that feeds a JVM ``Flow.Subscriber`` (or
``org.reactivestreams.Subscriber``) through ``rsspark.jvm.FeedPublisher``: the JVM Subscriber's
``request(n)`` comes back to Python (as the result of the py4j calls a pump thread makes) and is
requested from the Python Publisher; what arrives is encoded as Arrow and sent in batches, one
py4j call per batch, and decoded on the JVM into the requested element type.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa

from ..streams.demand import MAX_DEMAND, add_cap
from ..streams.errors import report_dropped, throw_if_fatal
from ..streams.types import Subscription
from .gateway import shim
from .schema import normalize

_COMPLETE = object()


class JvmSubscriber:
    """A Python Subscriber delivering to ``jvm_subscriber`` (in ``jvm``, a py4j JVMView).

    ``schema``: ``pyarrow.Schema`` or ``"id:int64,name:string"`` (None: inferred from the first
    elements by pyarrow). ``kind``: how the JVM sees an element: ``value`` (one column's boxed
    value: Long, String, byte[], ...), ``map``, ``list`` or a record / bean class name; default
    ``value`` for one column, else ``map``. Elements arriving here: scalars (one column), dicts,
    tuples, or ``pyarrow.RecordBatch``es (``elements="batches"``: each row becomes one JVM element,
    and this Subscriber requests one batch at a time while the JVM wants more rows).
    ``batch_rows``: most rows per py4j call; ``linger``: seconds to wait for a fuller batch.
    """

    def __init__(
        self,
        jvm_subscriber: Any,
        jvm: Any,
        *,
        schema: Any = None,
        kind: str | None = None,
        elements: str = "values",
        batch_rows: int = 8192,
        linger: float = 0.002,
    ) -> None:
        if jvm_subscriber is None:
            raise TypeError("JvmSubscriber needs a JVM subscriber")
        if elements not in ("values", "batches"):
            raise ValueError(f"elements={elements!r}: use 'values' or 'batches'")
        self._jsub = jvm_subscriber
        self._shim = shim(jvm)
        self.schema: pa.Schema | None = normalize(schema)
        self._kind = kind
        self._batches = elements == "batches"
        self._rows = int(batch_rows)
        self._linger = float(linger)
        self._cond = threading.Condition(threading.Lock())
        self._items: list[Any] = []
        self._buffered_rows = 0
        self._subscription: Subscription | None = None
        self._terminal: Any = None
        self._requested = 0  # requested from the Python publisher (elements; batches when elements=batches)
        self._received = 0
        self._jvm_demand = 0  # rows the JVM Subscriber asked for in total (saturating)
        self._rows_sent = 0
        self._stopped = False
        self.feed: Any = None  # the JVM FeedPublisher, once the pump started
        self.error: BaseException | None = None  # why the bridge stopped, if it failed
        self.done = threading.Event()  # set when the pump thread ended

    # -- Subscriber (the Python publisher's threads) --------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) is illegal (rule 2.13)")
        with self._cond:
            dup = self._subscription is not None or self._stopped
            if not dup:
                self._subscription = subscription
        if dup:
            subscription.cancel()  # rule 2.5
            return
        threading.Thread(target=self._pump, name="rs-spark-jvm-feed", daemon=True).start()

    def on_next(self, item: Any) -> None:
        if item is None:
            raise TypeError("on_next(None) is illegal (rule 2.13)")
        rows = item.num_rows if self._batches and isinstance(item, (pa.RecordBatch, pa.Table)) else 1
        with self._cond:
            self._items.append(item)
            self._received += 1
            self._buffered_rows += rows
            if self._buffered_rows >= self._rows or self._received == self._requested:
                self._cond.notify_all()

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise TypeError("on_error(None) is illegal (rule 2.13)")
        with self._cond:
            if self._terminal is None:
                self._terminal = error
            self._cond.notify_all()

    def on_complete(self) -> None:
        with self._cond:
            if self._terminal is None:
                self._terminal = _COMPLETE
            self._cond.notify_all()

    # -- the pump ---------------------------------------------------------------------------
    def _pump(self) -> None:
        try:
            self.feed = feed = self._shim.feedInto(self._jsub, self._kind or self._default_kind())
            while True:
                items, terminal = self._take()
                if items:
                    if not self._demand(feed.offer(self._encode(items))):
                        return
                if terminal is not None:
                    if terminal is _COMPLETE:
                        feed.complete()
                    else:
                        feed.error(f"{type(terminal).__module__}.{type(terminal).__qualname__}: {terminal}")
                    return
                if not items and self._upstream_idle():
                    if not self._demand(feed.awaitDemand(200)):
                        return
        except BaseException as exc:  # py4j (the JVM went away) or an encoding error
            throw_if_fatal(exc)  # ends this pump thread as it is (done is still set, below)
            self.error = exc
            self._cancel_upstream()
            try:
                if self.feed is not None:
                    self.feed.error(f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}")
            except Exception:
                pass
            report_dropped(exc, "feeding the JVM subscriber failed; the Python subscription was cancelled")
        finally:
            self.done.set()

    def _default_kind(self) -> str:
        if self.schema is None:
            return "auto"  # decided per batch on the JVM: value for one column, else map
        return "map" if len(self.schema) > 1 else "value"

    def _upstream_idle(self) -> bool:
        """True when nothing more can arrive from the Python publisher until more is requested."""
        return self._requested != MAX_DEMAND and self._received >= self._requested

    def _take(self) -> Any:
        """Wait for a batch's worth of items, a short linger, a terminal signal, or idle upstream."""
        with self._cond:
            deadline: float | None = None
            while True:
                if self._terminal is not None or self._buffered_rows >= self._rows:
                    break
                if self._items and (self._upstream_idle() or (deadline is not None and time.monotonic() >= deadline)):
                    break
                if not self._items and self._upstream_idle():
                    break
                if self._items and deadline is None:
                    deadline = time.monotonic() + self._linger
                timeout = 0.2 if deadline is None else max(0.0, deadline - time.monotonic())
                if not self._cond.wait(timeout) and not self._items:
                    # nothing for a while: let the caller poll the JVM for a cancel
                    return [], None
            items, self._items = self._items, []
            self._buffered_rows = 0
            terminal = self._terminal if not self._items else None
            return items, terminal

    def _demand(self, d: int) -> bool:
        """Handle demand reported by the JVM; False once the JVM Subscriber cancelled."""
        if d < 0:
            self._cancel_upstream()
            return False
        s = self._subscription
        if d > 0:
            self._jvm_demand = add_cap(self._jvm_demand, d)
        if s is None:
            return True
        if self._batches:
            # One batch at a time, while the JVM wants rows beyond those sent or on their way.
            if self._upstream_idle() and self._jvm_demand > self._rows_sent:
                self._request(s, 1)
        elif d > 0:
            self._request(s, d)
        return True

    def _request(self, s: Subscription, n: int) -> None:
        with self._cond:
            self._requested = add_cap(self._requested, n)
        s.request(n)

    def _encode(self, items: list[Any]) -> bytes:
        if self._batches or isinstance(items[0], (pa.RecordBatch, pa.Table)):
            batches: list[pa.RecordBatch] = []
            for b in items:
                batches.extend(b.to_batches() if isinstance(b, pa.Table) else [b])
        else:
            batches = [self._to_batch(items)]
        if self.schema is None:
            self.schema = batches[0].schema
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.schema) as w:
            for b in batches:
                if b.schema != self.schema:
                    b = pa.Table.from_batches([b]).select(self.schema.names).cast(self.schema).to_batches()[0]
                w.write_batch(b)
                self._rows_sent += b.num_rows
        return sink.getvalue().to_pybytes()

    def _to_batch(self, items: list[Any]) -> pa.RecordBatch:
        first = items[0]
        schema = self.schema
        if isinstance(first, dict):
            return pa.RecordBatch.from_pylist(items, schema=schema)
        if isinstance(first, (tuple, list)) and (schema is None or len(schema) > 1 or isinstance(first, tuple)):
            cols = list(zip(*items, strict=False))
            if schema is None:
                names = [f"f{i}" for i in range(len(cols))]
                return pa.RecordBatch.from_arrays([pa.array(c) for c in cols], names=names)
            arrays = [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=False)]
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
        if hasattr(first, "asDict"):  # a Spark Row, without importing pyspark
            return pa.RecordBatch.from_pylist([r.asDict() for r in items], schema=schema)
        if schema is None:
            return pa.RecordBatch.from_arrays([pa.array(items)], names=["value"])
        return pa.RecordBatch.from_arrays([pa.array(items, type=schema.field(0).type)], schema=schema)

    def _cancel_upstream(self) -> None:
        with self._cond:
            self._stopped = True
            s, self._subscription = self._subscription, None
            self._items = []
        if s is not None:
            try:
                s.cancel()
            except BaseException as exc:  # rule 3.15 says it should not raise
                throw_if_fatal(exc)
                report_dropped(exc, "cancelling the Python subscription raised")

    @property
    def rows_sent(self) -> int:
        """Rows handed to the JVM so far (encoded into Arrow batches)."""
        return self._rows_sent


__all__ = ["JvmSubscriber"]
