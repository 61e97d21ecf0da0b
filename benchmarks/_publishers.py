"""The ticking publishers the real-time paths read as partitions, served either in the benchmark's
own process (:class:`PublishersHere`) or from a process of their own (:class:`PublisherProcess`), as
a deployment serves its sources. Here, their clocks and servers share the GIL with the
Subscriber's hub: with two partitions that sharing made much of the tail (docs/realtime.md)."""

from __future__ import annotations

import multiprocessing as mp
import secrets
import ssl
import threading
from typing import Any

from _rows import Emitted, ticking


def serve_ticking(rate: float, parts: int, retention: Any, tls_files: tuple[str, str] | None, emitted: Emitted) -> Any:
    """``parts`` ticking publishers at ``rate / parts`` rows/s each, served as p0, p1, ... (arrow
    rows, resumable within ``retention``; over tls:// with ``tls_files``, a certificate and its key):
    the servers and the option endpoint naming them."""
    from rs_spark import net
    from rs_spark.net.protocol.address import parse

    context = None
    if tls_files is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls_files)
    token = secrets.token_urlsafe(24)
    servers = [
        net.serve(ticking(rate / parts, emitted), name=f"p{i}", token=token, ssl=context, retention=retention)
        for i in range(parts)
    ]
    endpoints = ",".join(
        f"p{i}=" + parse(sv.address).with_token(token).with_codec("arrow").format(with_token=True)
        for i, sv in enumerate(servers)
    )
    return servers, endpoints


class PublishersHere:
    """The publishers of :func:`serve_ticking`, in this process."""

    def __init__(self, rate: float, parts: int, retention: Any, tls_files: tuple[str, str] | None) -> None:
        self._emitted = Emitted()
        self._servers, self.endpoints = serve_ticking(rate, parts, retention, tls_files, self._emitted)

    def between(self, start: float, end: float) -> int:
        """Rows emitted at ``start <= t < end``."""
        return self._emitted.between(start, end)

    def stop(self) -> None:
        for sv in self._servers:
            sv.stop()


def _serve(conn: Any, args: tuple[Any, ...]) -> None:
    """The child process: serve, send the endpoints, answer the parent's counts until told to stop."""
    emitted = Emitted()
    servers, endpoints = serve_ticking(*args, emitted)
    conn.send(endpoints)
    try:
        while (msg := conn.recv())[0] == "between":
            conn.send(emitted.between(msg[1], msg[2]))
    finally:
        for sv in servers:
            sv.stop()
        conn.send("stopped")


class PublisherProcess:
    """The publishers of :func:`serve_ticking`, in a spawned process of their own."""

    def __init__(self, rate: float, parts: int, retention: Any, tls_files: tuple[str, str] | None) -> None:
        ctx = mp.get_context("spawn")  # a fresh interpreter: no JVM gateway, no threads inherited
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, (rate, parts, retention, tls_files)), daemon=True)
        self._proc.start()
        self._lock = threading.Lock()  # one question at a time on the pipe
        self.endpoints = self._conn.recv()

    def between(self, start: float, end: float) -> int:
        """Rows emitted at ``start <= t < end``."""
        with self._lock:
            self._conn.send(("between", start, end))
            return int(self._conn.recv())

    def stop(self) -> None:
        with self._lock:
            self._conn.send(("stop",))
            self._conn.recv()
        self._proc.join(30)


__all__ = ["PublishersHere", "PublisherProcess", "serve_ticking"]
