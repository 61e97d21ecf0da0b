"""tests/faultrelay.py's delay mode, over real sockets on 127.0.0.1: every byte arrives, in order, and
none before its delay (a lower bound only: how much later it comes depends on the machine)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.faultrelay import FaultRelay
from tests.waits import wait_until

pytestmark = pytest.mark.timeout(60)

DELAY = 0.3


class _Echo:
    """A server on 127.0.0.1 that sends back what it reads, noting when each chunk came; it closes
    when its client does."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.arrivals: list[tuple[float, int]] = []  # (when, bytes read so far) after each recv
        self.data = bytearray()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def target(self) -> tuple[str, int]:
        return self.listener.getsockname()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            try:
                while chunk := conn.recv(65536):
                    self.data += chunk
                    self.arrivals.append((time.monotonic(), len(self.data)))
                    conn.sendall(chunk)
            except ConnectionResetError:  # the relay's reset
                pass

    def close(self) -> None:
        self.listener.close()
        self.thread.join(30)


def _send(c: socket.socket, chunks: list[bytes]) -> list[tuple[float, int]]:
    """Send ``chunks``, noting before each when it went and where it ends: (when, bytes sent so far)."""
    sent, total = [], 0
    for chunk in chunks:
        total += len(chunk)
        sent.append((time.monotonic(), total))
        c.sendall(chunk)
    return sent


def _read_all(c: socket.socket) -> tuple[bytes, list[tuple[float, int]]]:
    data, arrivals = bytearray(), []
    while chunk := c.recv(65536):
        data += chunk
        arrivals.append((time.monotonic(), len(data)))
    return bytes(data), arrivals


def _not_early(sent: list[tuple[float, int]], arrivals: list[tuple[float, int]], delay: float) -> list[str]:
    """Chunks that arrived before ``delay`` had passed since their last byte was sent."""
    early = []
    for when, end in arrivals:
        went = next(t for t, upto in sent if upto >= end)  # the send that held the chunk's last byte
        if when - went < delay:
            early.append(f"bytes up to {end} after {when - went:.3f} s")
    return early


def test_every_byte_crosses_each_way_in_order_and_none_before_the_delay():
    echo = _Echo()
    relay = FaultRelay(echo.target, delay=DELAY)
    chunks = [bytes([i % 251]) * (1 + 997 * i) for i in range(40)] + [b"x" * 300_000]  # ~1 MB in all
    try:
        with socket.create_connection(("127.0.0.1", relay.port)) as c:
            sent = _send(c, chunks)
            c.shutdown(socket.SHUT_WR)  # the close crosses too: the echo ends, then the relay closes c
            back, arrivals = _read_all(c)
    finally:
        relay.close()
        echo.close()
    whole = b"".join(chunks)
    assert bytes(echo.data) == whole and back == whole
    assert _not_early(sent, echo.arrivals, DELAY) == []
    assert _not_early(sent, arrivals, 2 * DELAY) == []  # there and back


def test_a_shorter_delay_does_not_let_later_bytes_overtake_earlier_ones():
    echo = _Echo()
    relay = FaultRelay(echo.target)
    relay.delay(1.0)
    try:
        with socket.create_connection(("127.0.0.1", relay.port)) as c:
            first = _send(c, [b"first "])
            wait_until(lambda: relay.in_flight == 6, "the relay to read the first bytes")  # their delay is set
            relay.delay(0)
            c.sendall(b"second")
            c.shutdown(socket.SHUT_WR)
            back, _ = _read_all(c)
    finally:
        relay.close()
        echo.close()
    assert bytes(echo.data) == back == b"first second"  # "second", not delayed, waited behind "first "
    assert echo.arrivals[0][0] - first[0][0] >= 1.0  # "first " kept its delay (the way back had none)


def test_the_other_modes_still_apply_to_a_delayed_relay():
    echo = _Echo()
    relay = FaultRelay(echo.target, delay=0.05)
    try:
        c = socket.create_connection(("127.0.0.1", relay.port))
        c.sendall(b"ping")
        got = b""
        while len(got) < 4:
            got += c.recv(4)
        assert got == b"ping"
        relay.reset()
        with pytest.raises(ConnectionResetError):
            c.recv(4)
        c.close()
    finally:
        relay.close()
        echo.close()


def test_a_negative_delay_is_refused():
    relay = FaultRelay(("127.0.0.1", 9))
    try:
        with pytest.raises(ValueError, match="delay must be >= 0"):
            relay.delay(-1)
    finally:
        relay.close()
