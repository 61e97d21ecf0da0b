"""A TCP relay on 127.0.0.1 in front of a server, that fails as a network does (for outage tests).

``FaultRelay(target)`` listens on a port of its own and copies bytes both ways between each client
and a connection of its own to ``target``. Then:

* :meth:`FaultRelay.black_hole`: nothing passes either way and nothing is reset: open connections
  stay open but silent (a cloud network hiccup, a load balancer failing over); new connections
  are accepted (the kernel completes the handshake) and then hear nothing. At :meth:`heal` the
  connections opened during the hole are closed (their clients gave up on them long ago, as a
  dropped SYN would have made them), the older ones move bytes again.
* :meth:`FaultRelay.reset`: every connection is reset (RST) and new ones are reset as soon as
  they are accepted (the publisher's host restarting), until :meth:`heal`.
* ``FaultRelay(target, delay=s)`` or :meth:`FaultRelay.delay`: every byte reaches the other side
  ``s`` seconds after the relay read it, each direction (a long link: latency, not bandwidth). The
  relay reads as fast as the sender writes and a writer per direction releases each chunk at its
  due time, in order (a chunk read after the delay was shortened waits behind those read before);
  a side's close reaches the other side after the same delay. :meth:`heal` leaves the delay as it is.

A side's close is passed on as a TCP proxy does, after the bytes it sent: its FIN as a half close
(the other direction goes on until that side closes too), a failed connection as a close of both.

The relay is real TCP on loopback: the clients under test see real resets, real silence and real
timeouts, nothing mocked.
"""

from __future__ import annotations

import enum
import selectors
import socket
import struct
import threading
import time
from collections import deque
from typing import Any


class Mode(enum.Enum):
    PASS = "pass"
    BLACK_HOLE = "black hole"
    RESET = "reset"


def _rst(s: socket.socket) -> None:
    """Close ``s`` with a reset (SO_LINGER 0), not a FIN."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


class _Pair:
    """One client connection and the relay's connection to the target."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.closed = False
        self.ends = 0  # directions whose sender closed, the close passed on
        self.lines: list[_Line] = []
        self._lock = threading.Lock()

    def ended(self) -> None:
        """One direction ended (its sender closed): once both have, close the connections."""
        with self._lock:
            self.ends += 1
            both = self.ends == 2
        if both:
            self.close(reset=False)

    def close(self, reset: bool) -> None:
        if self.closed:
            return
        self.closed = True
        for s in (self.client, self.upstream):
            if reset:
                _rst(s)
            else:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


EOF = b""
BROKEN = None


class _Line:
    """One direction of a pair: chunks read from the sender, each sent on at its due time, in order.
    ``EOF`` stands for the sender's close, ``BROKEN`` for its connection failing."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.chunks: deque[tuple[float, bytes | None]] = deque()
        self.bytes = 0  # read, not yet sent on

    def put(self, due: float, data: bytes | None) -> None:
        with self.cond:
            self.chunks.append((due, data))
            self.bytes += len(data or b"")
            self.cond.notify()


class FaultRelay:
    """See the module docstring. ``target``: ``(host, port)`` or an address ``scheme://host:port/...``;
    ``delay``: seconds each byte takes through the relay, each direction (:meth:`delay`)."""

    def __init__(self, target: Any, delay: float = 0.0) -> None:
        if isinstance(target, str):
            hostport = target.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
            host, port = hostport.rsplit(":", 1)
            target = (host, int(port))
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Condition()
        self._mode = Mode.PASS
        self._delay = 0.0
        self.delay(delay)
        self._pairs: list[_Pair] = []
        self._held: list[socket.socket] = []  # accepted during a black hole: never connected upstream
        self._stopped = False
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept_loop, name="fault-relay accept", daemon=True)
        self._thread.start()

    # -- what a test does ---------------------------------------------------------------------------
    def address(self, address: str) -> str:
        """``address`` (of the target) with the relay's port instead: what the client under test dials."""
        scheme, rest = address.split("://", 1)
        hostport, sep, tail = rest.partition("/")
        host = hostport.rsplit(":", 1)[0]
        return f"{scheme}://{host}:{self.port}{sep}{tail}"

    @property
    def mode(self) -> Mode:
        return self._mode

    def delay(self, seconds: float) -> None:
        """Delay every byte read from now on by ``seconds``, each direction (0: none)."""
        if not seconds >= 0:
            raise ValueError(f"delay must be >= 0 seconds, not {seconds!r}")
        self._delay = float(seconds)

    def black_hole(self) -> None:
        with self._lock:
            self._mode = Mode.BLACK_HOLE
            self._lock.notify_all()

    def reset(self) -> None:
        with self._lock:
            self._mode = Mode.RESET
            pairs, self._pairs = self._pairs, []
            held, self._held = self._held, []
            self._lock.notify_all()
        for p in pairs:
            p.close(reset=True)
        for s in held:
            _rst(s)

    def heal(self) -> None:
        with self._lock:
            self._mode = Mode.PASS
            held, self._held = self._held, []
            self._lock.notify_all()
        for s in held:
            _rst(s)

    @property
    def connections(self) -> int:
        """Client connections relayed now."""
        with self._lock:
            return sum(not p.closed for p in self._pairs)

    @property
    def in_flight(self) -> int:
        """Bytes the relay read and has not sent on yet (both directions, every connection)."""
        with self._lock:
            lines = [line for p in self._pairs if not p.closed for line in p.lines]
        return sum(line.bytes for line in lines)

    def close(self) -> None:
        with self._lock:
            self._stopped = True
            pairs, self._pairs = self._pairs, []
            held, self._held = self._held, []
            self._mode = Mode.PASS
            self._lock.notify_all()
        try:
            self._listener.close()
        except OSError:
            pass
        for p in pairs:
            p.close(reset=False)
        for s in held:
            s.close()

    def __enter__(self) -> FaultRelay:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the relay --------------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._stopped:
                    client.close()
                    return
                mode = self._mode
                self.accepted += 1
                if mode is Mode.BLACK_HOLE:
                    self._held.append(client)
                    continue
            if mode is Mode.RESET:
                _rst(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _rst(client)  # the target is down: as a refused connection
                continue
            pair = _Pair(client, upstream)
            with self._lock:
                self._pairs.append(pair)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(pair, src, dst), name="fault-relay pump", daemon=True).start()

    def _pump(self, pair: _Pair, src: socket.socket, dst: socket.socket) -> None:
        """Read from ``src`` as it comes; ``_deliver`` (a thread of its own) writes to ``dst``."""
        line = _Line()
        pair.lines.append(line)
        threading.Thread(target=self._deliver, args=(pair, line, dst), name="fault-relay writer", daemon=True).start()
        sel = selectors.DefaultSelector()
        try:
            sel.register(src, selectors.EVENT_READ)
            while not pair.closed:
                with self._lock:  # in a black hole nothing is read: bytes wait in the kernel, as on a dead link
                    while self._mode is Mode.BLACK_HOLE and not pair.closed and not self._stopped:
                        self._lock.wait(0.5)
                if pair.closed or self._stopped:
                    return
                if not sel.select(0.1):
                    continue
                if self._mode is not Mode.PASS:
                    continue
                data = src.recv(65536)
                line.put(time.monotonic() + self._delay, data)  # b"" (EOF) when src closed
                if not data:
                    return
        except (OSError, ValueError):
            line.put(time.monotonic() + self._delay, BROKEN)  # after the bytes, as late as they
        finally:
            sel.close()

    def _deliver(self, pair: _Pair, line: _Line, dst: socket.socket) -> None:
        """Send each chunk of ``line`` to ``dst`` at its due time; pass a close on as a TCP proxy does
        (a sender's FIN as a half close, the pair closed once both sides have; a failed connection
        closes the pair)."""
        try:
            while not pair.closed and not self._stopped:
                with line.cond:
                    if not line.chunks:
                        line.cond.wait(0.5)
                        continue
                    due, data = line.chunks[0]
                    wait = due - time.monotonic()
                    if wait > 0:
                        line.cond.wait(wait)
                        continue
                    line.chunks.popleft()
                    line.bytes -= len(data or b"")
                if data is BROKEN:
                    break
                if data == EOF:
                    dst.shutdown(socket.SHUT_WR)
                    pair.ended()
                    return
                while self._mode is Mode.BLACK_HOLE and not pair.closed and not self._stopped:
                    with self._lock:  # in a black hole nothing passes, what was in flight neither
                        self._lock.wait(0.5)
                if pair.closed:
                    return
                dst.sendall(data)
        except (OSError, ValueError):
            pass
        if not pair.closed:
            pair.close(reset=False)


__all__ = ["FaultRelay", "Mode"]
