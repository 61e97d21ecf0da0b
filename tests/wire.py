"""RSocket frames on a raw socket, for tests that speak the wire themselves (attacks, resume, the
hub): what a hostile or hand-written peer sends and reads, with no client library in between."""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

from rs_spark.net.protocol import frames as F


def raw(*frames: Iterable[Any]) -> bytes:
    """Encoded frames (each a list of buffers, length prefix included) as one byte string."""
    return b"".join(bytes(b) for fr in frames for b in fr)


def split_frames(data: bytes) -> list[F.Frame]:
    """The whole frames at the start of ``data`` (a partial last one is left out)."""
    out = []
    while len(data) >= 3:
        n = int.from_bytes(data[:3], "big")
        if len(data) < 3 + n:
            break
        out.append(F.decode(data[3 : 3 + n]))
        data = data[3 + n :]
    return out


class RawFrames:
    """Frames sent and read on ``sock`` one at a time; reads wait up to ``timeout`` seconds."""

    def __init__(self, sock: socket.socket, timeout: float = 30.0) -> None:
        self.sock = sock
        self._buf = b""
        sock.settimeout(timeout)

    def send(self, *frames: Iterable[Any]) -> None:
        self.sock.sendall(raw(*frames))

    def next(self) -> F.Frame:
        """The next frame; fails the test if the peer closes first."""
        while len(self._buf) < 3 or len(self._buf) < 3 + int.from_bytes(self._buf[:3], "big"):
            chunk = self.sock.recv(65536)
            assert chunk, "the peer closed the connection"
            self._buf += chunk
        n = int.from_bytes(self._buf[:3], "big")
        f, self._buf = F.decode(self._buf[3 : 3 + n]), self._buf[3 + n :]
        return f

    def until_closed(self) -> list[F.Frame]:
        """Every frame from here until the peer closes the connection (a read timeout fails the test)."""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                frames, self._buf = split_frames(self._buf), b""
                return frames
            self._buf += chunk
