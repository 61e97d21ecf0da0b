"""JVM Publisher -> Python Publisher.

The JVM side (``rsspark.jvm.PublisherBridge``) subscribes to the JVM Publisher, requests
upstream what the Python Subscriber demands (never more: rule 1.1 holds towards Python, and the
JVM publisher is checked against it too), capped at ``max_in_flight`` rows not yet emitted, and
hands over what arrives as one Arrow IPC batch per py4j call (through a memory-mapped file).
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from typing import Any

import pyarrow as pa

from ..arrow.validate import MalformedArrow, read_stream
from ..streams.demand import MAX_DEMAND
from ..streams.drain import QueueSubscription, check_subscriber, subscribe_with
from ..streams.errors import report_dropped
from ..streams.types import Subscriber
from .gateway import shim
from .schema import normalize, to_spec

ELEMENTS = ("values", "rows", "batches")


class JvmError(RuntimeError):
    """The JVM Publisher (or the bridge) failed; ``java_type`` is the Java exception's class name."""

    def __init__(self, text: str, received: int) -> None:
        java_type, _, message = (text or "java.lang.RuntimeException: (no message)").partition(": ")
        super().__init__(f"the JVM publisher failed after {received} elements with {java_type}: {message}")
        self.java_type = java_type
        self.java_message = message


class JvmPublisher:
    """A JVM ``Flow.Publisher`` (or ``org.reactivestreams.Publisher``) as a Python Publisher.

    ``jvm``: a py4j JVMView (``spark._jvm``, or ``rs_spark.jvm.launch().jvm``) whose classpath has
    the shim. ``schema``: a ``pyarrow.Schema`` or ``"id:int64,name:string"``; None lets the first
    element's class declare it (boxed primitive, String, byte[] -> one column ``value``; records;
    beans). ``elements``: ``values`` (scalars for one column, else dicts), ``rows`` (dicts) or
    ``batches`` (``pyarrow.RecordBatch`` of at most ``batch_rows`` rows; ``request(n)`` asks for n
    batches, requested upstream as ``n * batch_rows`` elements). A batch leaves the JVM when it
    has ``batch_rows`` rows, when everything requested has arrived, when no element arrived for
    ``linger`` seconds, or ``max_linger`` seconds after its first element: a fast publisher fills
    big batches (few calls), a slow one is not held back. ``transfer``: ``file`` (default; the JVM
    writes each batch into a file on /dev/shm, or the temp directory, which Python memory-maps:
    the batch's buffers point into it; py4j carries byte[] as base64 text, which measured 2-3x
    slower) or ``bytes`` (through py4j; use it when the JVM does not share this machine's file
    system). Int64 columns of Long elements are kept unboxed (``long[]``) on the JVM side.
    ``max_in_flight``: most rows requested from the JVM and not yet emitted to the Subscriber
    (default 4 x ``batch_rows``): the bound on what the bridge buffers, whatever the demand.

    Each ``subscribe`` subscribes to the JVM Publisher once (cold publishers start over).
    """

    def __init__(
        self,
        jvm_publisher: Any,
        jvm: Any,
        *,
        schema: Any = None,
        elements: str = "values",
        batch_rows: int = 65536,
        linger: float = 0.002,
        max_linger: float = 0.05,
        max_in_flight: int | None = None,
        transfer: str = "file",
    ) -> None:
        if jvm_publisher is None:
            raise TypeError("JvmPublisher needs a JVM publisher (rule 1.9 style: not None)")
        if elements not in ELEMENTS:
            raise ValueError(f"elements={elements!r}: use one of {', '.join(ELEMENTS)}")
        if batch_rows <= 0:
            raise ValueError(f"batch_rows={batch_rows}: must be > 0")
        if transfer not in ("file", "bytes"):
            raise ValueError(f"transfer={transfer!r}: use 'file' or 'bytes'")
        self.transfer = transfer
        self._jpub = jvm_publisher
        self._shim = shim(jvm)
        self.schema: pa.Schema | None = normalize(schema)
        self.elements = elements
        self.batch_rows = int(batch_rows)
        self.linger_ms = max(0, int(linger * 1000))
        self.max_linger_ms = max(self.linger_ms, int(max_linger * 1000))
        if max_in_flight is not None and max_in_flight < batch_rows:
            raise ValueError(f"max_in_flight={max_in_flight}: must be >= batch_rows ({batch_rows})")
        self.max_in_flight = int(max_in_flight) if max_in_flight is not None else 4 * self.batch_rows

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)  # rule 1.9
        spec = to_spec(self.schema) if self.schema is not None else None
        try:
            bridge = self._shim.pull(self._jpub, spec)
        except Exception as exc:  # py4j: the JVM refused (e.g. not a Publisher)
            from ..streams.drain import TerminalSubscription

            subscribe_with(subscriber, TerminalSubscription(subscriber, exc), start=True)
            return
        sub = _PullSubscription(subscriber, bridge, self)
        subscribe_with(subscriber, sub)
        sub.start()

    def on_commit(self, position: int) -> None:
        """Tell the JVM publisher rows before ``position`` are committed, if it implements
        ``rsspark.jvm.Committable`` (the ``reactive`` source calls this after Spark's commit)."""
        self._shim.commit(self._jpub, int(position))

    def __repr__(self) -> str:
        return f"<JvmPublisher {self._jpub} elements={self.elements} batch_rows={self.batch_rows}>"


class _PullSubscription(QueueSubscription):
    """The Python Subscriber's Subscription: demand goes to the JVM at once, a pump thread polls batches."""

    __slots__ = (
        "_bridge",
        "_elements",
        "_rows",
        "_linger",
        "_flock",
        "_forwarded",
        "_received",
        "_thread",
        "_ended",
        "_schema",
        "_file",
        "_max_linger",
        "_max_in_flight",
    )

    def __init__(self, subscriber: Subscriber[Any], bridge: Any, pub: JvmPublisher) -> None:
        super().__init__(subscriber, on_release=self._released, delay_error=True)
        self._bridge = bridge
        self._elements = pub.elements
        self._rows = pub.batch_rows
        self._linger = pub.linger_ms
        self._max_linger = pub.max_linger_ms
        self._max_in_flight = pub.max_in_flight
        self._schema = pub.schema
        self._flock = threading.Lock()  # forwarding: keeps JVM request() calls serial (rule 2.7)
        self._forwarded = 0  # rows requested from the JVM in total (saturating)
        self._received = 0  # rows received from the JVM in total
        self._ended = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: str | None = _transfer_file() if pub.transfer == "file" else None

    def start(self) -> None:
        if self.is_done:
            return
        self._thread = threading.Thread(target=self._pump, name="rs-spark-jvm-pull", daemon=True)
        self._thread.start()

    # -- demand: Python -> JVM ------------------------------------------------------------
    def request(self, n: int) -> None:
        super().request(n)  # validation (rule 3.9) and saturation (rule 3.17) live there
        if n.__class__ is int and n > 0:
            self._forward(n)  # n is in Python's demand now (outstanding), _forward reads it there

    def _forward(self, n: int) -> None:
        """Top up what the JVM is asked for: the rows Python's demand still needs (values / rows:
        one per element; batches: batch_rows per batch, as rs_spark.net does for Arrow credits),
        but never more than ``max_in_flight`` rows requested from the JVM and not yet emitted
        downstream. So the JVM bridge and this Subscription's queue hold at most that, even when
        the Subscriber requested Long.MAX_VALUE and is slower than the JVM publisher."""
        with self._flock:
            if self.is_done or self._ended.is_set():
                return
            queued = self.queued  # before outstanding: a race can only make `want` smaller
            out = self.outstanding
            per = self._rows if self._elements == "batches" else 1
            want = MAX_DEMAND if out >= MAX_DEMAND else (out - queued) * per
            in_flight = self._forwarded - self._received  # requested from the JVM, not yet polled
            room = self._max_in_flight - in_flight - queued * per
            k = min(want - in_flight, room)
            if k <= 0:
                return
            if k < want - in_flight and k < self._max_in_flight // 4:
                return  # capped and >= 3/4 of the cap still in flight: top up later, in bigger steps
            self._forwarded += k
            try:
                self._bridge.request(k)
            except Exception as exc:
                self.offer_error(exc)

    def _emit(self) -> None:
        e = self._emitted
        super()._emit()
        if self._emitted != e and not self.is_done:
            self._forward(0)  # emitted elements free room in flight

    # -- elements: JVM -> Python (pump thread) -----------------------------------------
    def _pump(self) -> None:
        bridge = self._bridge
        try:
            bridge.start()
            path = self._file
            while not self.is_done:
                if path is None:
                    data = bridge.poll(self._rows, 200, self._linger, self._max_linger)
                    if data is None:
                        continue
                else:
                    n = bridge.pollInto(path, self._rows, 200, self._linger, self._max_linger)
                    if n < 0:
                        continue
                    data = _map(path) if n else _discard(path)
                if len(data) == 0:
                    state = bridge.state()
                    if state == "error":
                        self.offer_error(JvmError(bridge.errorText(), self._received))
                    elif state == "complete":
                        self.offer_complete()
                    break
                batch = _one_batch(data, self._received)
                if self._schema is None:
                    self._schema = batch.schema
                self._received += batch.num_rows
                self._offer_batch(batch)
        except Exception as exc:  # py4j: the JVM went away, or a bug
            if not self.is_done:
                self.offer_error(exc)
        finally:
            self._ended.set()
            self._close_bridge()
            if self._file is not None:
                _remove_transfer_file(self._file)

    def _offer_batch(self, batch: pa.RecordBatch) -> None:
        if self._elements == "batches":
            self.enqueue(batch)
        elif self._elements == "values" and batch.num_columns == 1:
            self.enqueue_all(batch.column(0).to_pylist())
        else:
            self.enqueue_all(batch.to_pylist())
        self.drain()

    def _released(self) -> None:
        # Drain owner, once: cancel (or end) reaches the JVM, which wakes the pump's poll.
        if self._ended.is_set():
            return
        try:
            self._bridge.cancel()
        except Exception as exc:
            report_dropped(exc, "cancelling the JVM bridge failed")

    def _close_bridge(self) -> None:
        b, self._bridge = self._bridge, _Closed()
        try:
            b.close()
        except Exception:  # the JVM may be gone
            pass

    @property
    def received_rows(self) -> int:
        """Rows received from the JVM so far."""
        return self._received

    @property
    def requested_rows(self) -> int:
        """Rows requested from the JVM so far (saturating): the Subscriber's demand as forwarded."""
        return self._forwarded

    def wait_ended(self, timeout: float | None = None) -> bool:
        """Wait until the pump thread has stopped (the stream ended or was cancelled); False on timeout."""
        return self._ended.wait(timeout)


def _map(path: str) -> Any:
    """The batch file the JVM just wrote, memory-mapped (zero-copy: the batch's buffers point into
    the mapping). The name is unlinked at once, so the JVM writes its next batch into a new file
    while this one's pages live as long as the batch does. The file must be a regular file of this
    user's (it is, in a 0700 folder of ours; checked all the same, without following links)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise MalformedArrow(f"the JVM's hand-off file {path}", "it is not a regular file of this user's")
        mm = pa.memory_map(f"/proc/self/fd/{fd}" if os.path.isdir("/proc/self/fd") else path)
    finally:
        os.close(fd)
    try:
        os.unlink(path)
        return mm.read_buffer()
    finally:
        mm.close()  # the fd; the mapping stays while buffers point into it


def _discard(path: str) -> bytes:
    """An empty hand-off (the stream ended, or a bad element cut the batch): no batch in it."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return b""


def _transfer_file() -> str:
    """Where the JVM writes batches: a name in a private folder (0700, random name) on /dev/shm,
    so no other local user can read a batch or plant a link the JVM would follow. The file itself
    does not exist yet: the JVM creates each batch's file exclusively (0600, no links followed)."""
    d = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    return os.path.join(tempfile.mkdtemp(prefix="rs-spark-jvm-", dir=d), "batch.arrow")


def _remove_transfer_file(path: str) -> None:
    _discard(path)
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


class _Closed:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


def _one_batch(data: Any, received: int) -> pa.RecordBatch:
    """The one batch of a hand-off from the JVM, validated like any bytes from outside the process."""
    batches = read_stream(data, f"the JVM's hand-off after {received} rows")
    if len(batches) != 1:
        raise MalformedArrow(f"the JVM's hand-off after {received} rows", f"{len(batches)} record batches, not one")
    return batches[0]


__all__ = ["JvmPublisher", "JvmError", "ELEMENTS"]
