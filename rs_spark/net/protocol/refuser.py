"""Refusing a connection without losing the refusal: :func:`refuse`.

A client sends SETUP right after connecting; closing a socket with those bytes unread makes the
kernel answer with a reset, which can destroy our ERROR frame before the client reads it. So a
refused socket gets the ERROR frame and a FIN, and what the client sends is read and dropped
until it closes or ``_REFUSE_LINGER`` seconds pass. One short-lived thread does that for every
server; at most ``_REFUSE_MAX`` sockets are held (a flood beyond that is closed at once) and the
thread ends when none are left.
"""

from __future__ import annotations

import select
import socket
import threading
import time

from .frames import Buffer

_REFUSE_LINGER = 2.0
_REFUSE_MAX = 256


class _Refuser:
    """Holds refused sockets until their client closes or the linger ends, on one thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, tuple[socket.socket, float]] = {}  # fd -> (socket, deadline)
        self._thread: threading.Thread | None = None

    def refuse(self, sock: socket.socket, data: bytes) -> None:
        try:
            sock.setblocking(False)
            sock.send(data)  # small: fits in an empty socket buffer
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        with self._lock:
            if len(self._held) >= _REFUSE_MAX:
                sock.close()
                return
            self._held[sock.fileno()] = (sock, time.monotonic() + _REFUSE_LINGER)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rs-net-refuser", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._held:
                    self._thread = None
                    return
                held = dict(self._held)
            self._close(self._finished(held))

    @staticmethod
    def _finished(held: dict[int, tuple[socket.socket, float]]) -> set[int]:
        """Wait up to 50 ms; the sockets whose client closed or whose linger ended."""
        poller = select.poll()
        for fd in held:
            poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        now = time.monotonic()
        done = {fd for fd, (_, deadline) in held.items() if now > deadline}
        for fd, _ in poller.poll(50):
            try:
                if held[fd][0].recv(65536):
                    continue  # dropped: the client is still sending
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                pass
            done.add(fd)
        return done

    def _close(self, done: set[int]) -> None:
        with self._lock:
            for fd in done:
                entry = self._held.pop(fd, None)
                if entry is not None:
                    entry[0].close()


_refuser = _Refuser()


def refuse(sock: socket.socket, frame: list[Buffer]) -> None:
    """Send ``frame`` (an encoded ERROR frame) on a refused socket and close it without a reset."""
    _refuser.refuse(sock, b"".join(bytes(b) for b in frame))


__all__ = ["refuse"]
