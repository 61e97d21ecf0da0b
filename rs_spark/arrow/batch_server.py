"""Serve record batches held in one process to readers in other processes, as Arrow IPC over TCP.

The ``reactive`` source keeps a planned micro-batch in its driver-side reader process until
the batch commits (when no replay log is configured). Shipping those rows inside Spark's
``InputPartition`` sends every byte through the driver JVM, the task serializer and the
executor's Python runner (measured: about 0.5 s per 20 MB). Instead the partition names the
rows, and the executor fetches them straight from the reader process with :func:`fetch`.

Protocol, one request per connection: the client sends the 32-byte secret, then a 4-byte
big-endian length and a JSON request ``{"key": k, "lo": lo, "hi": hi}``; the server answers
a 4-byte length and a JSON header (``{"ok": true, "bytes": n}`` or ``{"error": "..."}``),
then ``n`` bytes of one Arrow IPC stream. The secret is random per server and travels only
inside Spark's tasks, so only holders of a partition can fetch its rows.
"""
from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import struct
import threading
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from .validate import read_stream

_SECRET_LEN = 32
_LEN = struct.Struct(">I")

Lookup = Callable[[int, int, int], Tuple[pa.Schema, Sequence[pa.RecordBatch]]]
"""``(key, lo, hi) -> (schema, batches)``: rows ``[lo, hi)`` of the table stored under ``key``."""


class FetchError(RuntimeError):
    """The rows could not be fetched from the serving process."""


def host_key() -> str:
    """Identifies this host *and* network namespace: equal keys mean 127.0.0.1 reaches the server."""
    parts = [socket.gethostname()]
    for path in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/net"):
        try:
            parts.append(os.readlink(path) if path.endswith("/net") else open(path).read().strip())
        except OSError:
            parts.append("?")
    return "|".join(parts)


def _advertised_addresses() -> List[str]:
    """Addresses other hosts may reach this one at, most likely first."""
    out: List[str] = []
    env = os.environ.get("SPARK_LOCAL_IP")
    if env:
        out.append(env)
    try:  # the interface of the default route (no packet is sent)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            out.append(s.getsockname()[0])
    except OSError:
        pass
    try:
        out.append(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    out.append(socket.gethostname())
    seen: List[str] = []
    for a in out:
        if a and a not in seen and not a.startswith("127."):
            seen.append(a)
    return seen


class Address:
    """Where a :class:`BatchServer` listens: picklable, carried inside partitions."""

    __slots__ = ("host_key", "hosts", "port", "secret")

    def __init__(self, host_key: str, hosts: List[str], port: int, secret: bytes) -> None:
        self.host_key, self.hosts, self.port, self.secret = host_key, hosts, port, secret

    def __getstate__(self) -> tuple:
        return (self.host_key, self.hosts, self.port, self.secret)

    def __setstate__(self, state: tuple) -> None:
        self.host_key, self.hosts, self.port, self.secret = state

    def candidates(self) -> List[str]:
        if self.host_key == host_key():
            return ["127.0.0.1"]
        return list(self.hosts)

    def __repr__(self) -> str:  # never show the secret
        return f"Address(hosts={self.hosts}, port={self.port})"


class BatchServer:
    """A daemon-thread TCP server answering fetches with ``lookup(key, lo, hi)``."""

    def __init__(self, lookup: Lookup, bind: str = "0.0.0.0") -> None:
        self._lookup = lookup
        self._secret = secrets.token_bytes(_SECRET_LEN)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((bind, 0))
        self._sock.listen(64)
        self._closed = False
        self.address = Address(host_key(), _advertised_addresses(), self._sock.getsockname()[1], self._secret)
        self._thread = threading.Thread(target=self._accept_loop, name="rs-spark-batch-server", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="rs-spark-batch-fetch", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(60)
                if not hmac.compare_digest(_recv_exact(conn, _SECRET_LEN), self._secret):
                    return  # not one of our partitions: say nothing
                req = json.loads(_recv_exact(conn, _LEN.unpack(_recv_exact(conn, 4))[0]))
                try:
                    schema, batches = self._lookup(int(req["key"]), int(req["lo"]), int(req["hi"]))
                    sink = pa.BufferOutputStream()
                    with pa.ipc.new_stream(sink, schema) as w:
                        for b in batches:
                            w.write_batch(b)
                    body = sink.getvalue()
                    header = {"ok": True, "bytes": body.size}
                except Exception as exc:  # reported to the executor, which fails the task with it
                    body, header = None, {"error": f"{type(exc).__name__}: {exc}"}
                h = json.dumps(header).encode()
                conn.sendall(_LEN.pack(len(h)) + h)
                if body is not None:
                    conn.sendall(memoryview(body))
            except (OSError, ValueError, KeyError):
                return  # the client went away or spoke nonsense

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() in the server thread
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = conn.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError(f"connection closed after {got} of {n} bytes")
        got += k
    return bytes(buf) if n <= 4096 else buf  # type: ignore[return-value]


def fetch(address: Address, key: int, lo: int, hi: int, connect_timeout: float = 10.0) -> List[pa.RecordBatch]:
    """Rows ``[lo, hi)`` stored under ``key`` at ``address``; :class:`FetchError` says why not."""
    errors: Dict[str, str] = {}
    for host in address.candidates():
        try:
            conn = socket.create_connection((host, address.port), timeout=connect_timeout)
        except OSError as exc:
            errors[host] = f"{type(exc).__name__}: {exc}"
            continue
        with conn:
            try:
                conn.settimeout(None)
                req = json.dumps({"key": key, "lo": lo, "hi": hi}).encode()
                conn.sendall(address.secret + _LEN.pack(len(req)) + req)
                header = json.loads(_recv_exact(conn, _LEN.unpack(_recv_exact(conn, 4))[0]))
                if "error" in header:
                    raise FetchError(header["error"])
                body = _recv_exact(conn, int(header["bytes"]))
            except (OSError, ValueError) as exc:
                raise FetchError(f"fetching rows [{lo}, {hi}) of {key} from {host}:{address.port} failed: "
                                 f"{type(exc).__name__}: {exc}") from None
        return read_stream(pa.py_buffer(body), f"the batch server at {host}:{address.port} (rows [{lo}, {hi}) of {key})")
    raise FetchError(f"cannot connect to {address!r} from {socket.gethostname()}: {errors}")


__all__ = ["BatchServer", "Address", "FetchError", "fetch", "host_key"]
