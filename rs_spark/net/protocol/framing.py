"""Frames over a byte stream: :class:`FrameReader` splits what arrives into frames,
:func:`send_buffers` writes encoded frames.

TCP and Unix sockets carry no message boundaries, so every frame is prefixed with its 24-bit
length (RSocket "Framing Protocol Usage"; :mod:`.frames` adds the prefix). :class:`FrameReader`
undoes that, refusing frames above a size limit before reading their body, and waits with
``poll`` so the reader thread can run timers without a socket timeout (a timeout would also
limit the writer's sends).
"""

from __future__ import annotations

import enum
import select
import socket
import sys
import time
from collections.abc import Generator, Iterator
from typing import Any

from .frames import Buffer, FrameError
from .tls import Sock, TlsSocket

_CHUNK = 64 * 1024  # the shared buffer: many small frames per read; a frame that does not fit gets its own
_READABLE = select.POLLIN | select.POLLERR | select.POLLHUP


class Tick(enum.Enum):
    IDLE = "idle"


IDLE = Tick.IDLE
"""Yielded by :meth:`FrameReader.frames` once per tick without a whole frame: when no byte arrived
for one tick, and also while a frame trickles in (so timers run even against a peer that sends
one byte at a time)."""


def send_buffers(sock: Sock, bufs: list[Buffer]) -> None:
    """Write all of ``bufs`` with ``sendmsg`` (no copy; a :class:`TlsSocket` encrypts them in place)."""
    views = [memoryview(b).cast("B") if not isinstance(b, bytes) else b for b in bufs]
    i = 0
    while i < len(views):
        group = views[i : i + 512]  # stay under IOV_MAX
        sent = sock.sendmsg(group)
        # Skip what went out; a partial send leaves the rest of one buffer.
        for b in group:
            n = len(b)
            if sent >= n:
                sent -= n
                i += 1
            else:
                views[i] = memoryview(b)[sent:]
                break


class _Ticks:
    """When the next :data:`IDLE` is due: one tick after the last one (or the start)."""

    __slots__ = ("_tick", "_due")

    def __init__(self, tick: float) -> None:
        self._tick = tick
        self._due = time.monotonic() + tick

    def restart(self) -> None:
        self._due = time.monotonic() + self._tick

    def due(self) -> bool:
        """Whether a tick has passed since the last :data:`IDLE`; if so, the next one starts now."""
        if time.monotonic() < self._due:
            return False
        self.restart()
        return True


class FrameReader:
    """Splits a byte stream into frames (length prefix removed)."""

    def __init__(self, sock: Sock, max_frame: int, what: str = "") -> None:
        self._sock = sock
        self._max = max_frame
        self.what = what  # appended to the "too big" error (e.g. why a lower limit applies now)
        self._buf = bytearray(_CHUNK)
        self._view = memoryview(self._buf)
        self._start = 0  # the first byte not yet handed out
        self._end = 0  # the end of what was read
        self._poll = select.poll()
        # Not POLLPRI: TCP urgent data (MSG_OOB) is no part of the stream, and waking for it
        # would make every wait return at once.
        self._poll.register(sock.fileno(), _READABLE)
        self.bytes_read = 0

    @property
    def max_frame(self) -> int:
        return self._max

    @max_frame.setter
    def max_frame(self, value: int) -> None:
        self._max = value

    def frames(self, tick: float) -> Iterator[Buffer | Tick]:
        """Yield frames, or :data:`IDLE` after ``tick`` seconds without data. Ends at EOF.

        Frames up to 64 KiB (with their 3-byte prefix) come as ``bytes``; bigger ones as a writable buffer of their own
        (a ``pyarrow.Buffer`` when pyarrow is loaded) that Arrow can read zero-copy.
        Raises :class:`FrameError` for a frame above the size limit."""
        ticks = _Ticks(tick)
        buf, view = self._buf, self._view
        while True:
            s = self._start
            if self._end - s >= 3:
                length = (buf[s] << 16) | (buf[s + 1] << 8) | buf[s + 2]
                if length > self._max:
                    raise FrameError(
                        f"frame of {length} bytes exceeds this side's limit of {self._max} bytes{self.what}"
                    )
                if self._end - s - 3 >= length:  # the whole frame is here: the hot path
                    self._start = s + 3 + length
                    yield bytes(view[s + 3 : s + 3 + length])
                    continue
                if 3 + length > _CHUNK:  # with its prefix it would not fit the shared buffer
                    big = yield from self._read_big(length, tick, ticks)
                    if big is None:
                        return
                    yield big
                    continue
            if not (yield from self._fill(tick, ticks)):
                return

    def _fill(self, tick: float, ticks: _Ticks) -> Generator[Tick, None, bool]:
        """Read more into the shared buffer (the partial frame moved to its front first);
        False at EOF."""
        if self._start:
            rest = self._end - self._start
            self._buf[:rest] = self._view[self._start : self._end]
            self._start, self._end = 0, rest
        n = self._read(self._view[self._end :], tick)
        if n is None:
            ticks.restart()
            yield IDLE
            return True
        if n == 0:
            return False
        self._end += n
        if ticks.due():
            yield IDLE
        return True

    def _read_big(self, length: int, tick: float, ticks: _Ticks) -> Generator[Tick, None, Any]:
        """A frame above 64 KiB, read straight into a buffer of its own and handed out without
        another copy (Arrow reads record batches from it zero-copy); None at EOF."""
        big, mv = self._big_buffer(length)
        s = self._start
        got = self._end - s - 3
        mv[:got] = self._view[s + 3 : self._end]
        self._start = self._end = 0
        while got < length:
            n = self._read(mv[got:], tick)
            if n is None:
                ticks.restart()
                yield IDLE
                continue
            if n == 0:
                return None
            got += n
            if ticks.due():
                yield IDLE
        return big  # mv goes with this generator's frame: no view of ``big`` outlives the read

    @staticmethod
    def _big_buffer(length: int) -> tuple[Any, memoryview]:
        # From Arrow's memory pool when pyarrow is loaded (no zero-fill, no fresh pages per
        # frame: a bytearray of this size is a new mmap, page-faulted in for every batch).
        pa = sys.modules.get("pyarrow")
        if pa is not None:
            b = pa.allocate_buffer(length)
            return b, memoryview(b).cast("B")
        b = bytearray(length)
        return b, memoryview(b)

    def _wait(self, timeout: float) -> bool:
        s = self._sock
        ms = max(0, int(timeout * 1000))
        if isinstance(s, TlsSocket):
            if s.pending():
                return True  # decrypted bytes are waiting inside the TLS layer, not on the fd
            if s.unsent():  # TLS answers the socket could not take: the next read sends them once it can
                return self._wait_writable_too(ms)
        return bool(self._poll.poll(ms))

    def _wait_writable_too(self, ms: int) -> bool:
        fd = self._sock.fileno()
        self._poll.modify(fd, _READABLE | select.POLLOUT)
        try:
            return bool(self._poll.poll(ms))
        finally:
            self._poll.modify(fd, _READABLE)

    def _read(self, view: memoryview, tick: float) -> int | None:
        """Bytes read into ``view`` (0 at EOF), or None after ``tick`` seconds without data.
        Tries a non-blocking read first: under load data is usually there, saving a poll."""
        n = self._read_now(view)
        if n is not None:
            return n
        if not self._wait(tick):
            return None
        # Never a blocking read, even after poll said readable: a TLS socket may hold half a
        # record, a plain one an urgent byte; a read that blocked would stop the reader's timers.
        return self._read_now(view)  # None: the caller reads again

    def _read_now(self, view: memoryview) -> int | None:
        """What can be read without waiting (0 at EOF), or None."""
        try:
            n = self._sock.recv_into(view, 0, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return None
        self.bytes_read += n
        return n


__all__ = ["FrameReader", "IDLE", "Tick", "send_buffers"]
