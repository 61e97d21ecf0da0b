"""Serve record batches held in one process to readers in other processes, as Arrow IPC over TCP.

The ``reactive`` source keeps a planned micro-batch in its driver-side reader process until
the batch commits (when no replay log is configured). Shipping those rows inside Spark's
``InputPartition`` sends every byte through the driver JVM, the task serializer and the
executor's Python runner (measured: about 0.5 s per 20 MB). Instead the partition names the
rows, and the executor fetches them straight from the reader process with :func:`fetch`.

Protocol, one request per connection: the client sends a 4-byte big-endian length and a JSON
request ``{"key": k, "lo": lo, "hi": hi, "mac": m}``; the server answers a 4-byte length and a
JSON header (``{"ok": true, "bytes": n}`` or ``{"error": "..."}``), then ``n`` bytes of one Arrow
IPC stream. ``m`` is an HMAC-SHA256 of the range under a key random per server and never sent:
each partition carries the credential for its own rows only (:meth:`BatchServer.grant`), so a
sniffed fetch cannot fetch anything else. Hostile peers are bounded: at most ``max_handlers``
connections are served at once (others wait in the listen backlog), a request must arrive
within ``auth_timeout`` seconds and be at most 1 KiB (checked before reading it), and the client
caps what it accepts from a server.
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
_MAX_REQUEST = 1024  # a fetch request is ~100 bytes of JSON
_MAX_HEADER = 64 * 1024  # what the client accepts as a response header
MAX_BODY_BYTES = 2**31 - 1  # what the client accepts as one partition's Arrow stream

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
    """Where a :class:`BatchServer` listens, with one range's credential: picklable, carried inside
    partitions (``secret`` is the HMAC granting that range, never the server's key)."""

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

    def __repr__(self) -> str:  # never show the credential
        return f"Address(hosts={self.hosts}, port={self.port})"


def _mac(key: bytes, k: int, lo: int, hi: int) -> bytes:
    return hmac.new(key, f"{k}:{lo}:{hi}".encode(), "sha256").digest()


class BatchServer:
    """A daemon-thread TCP server answering fetches with ``lookup(key, lo, hi)``."""

    def __init__(self, lookup: Lookup, bind: Optional[str] = None, max_handlers: int = 8,
                 auth_timeout: float = 5.0) -> None:
        self._lookup = lookup
        self._secret = secrets.token_bytes(_SECRET_LEN)
        self._auth_timeout = auth_timeout
        self._slots = threading.BoundedSemaphore(max_handlers)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((bind or os.environ.get("SPARK_LOCAL_IP") or "0.0.0.0", 0))
        self._sock.listen(64)
        self._closed = False
        self.address = Address(host_key(), _advertised_addresses(), self._sock.getsockname()[1], b"")
        self._thread = threading.Thread(target=self._accept_loop, name="rs-spark-batch-server", daemon=True)
        self._thread.start()

    def grant(self, key: int, lo: int, hi: int) -> Address:
        """The address with the credential for rows ``[lo, hi)`` of ``key`` (and nothing else)."""
        a = self.address
        return Address(a.host_key, a.hosts, a.port, _mac(self._secret, key, lo, hi))

    def _accept_loop(self) -> None:
        while not self._closed:
            self._slots.acquire()  # at most max_handlers at once: the rest wait in the backlog
            try:
                conn, _ = self._sock.accept()
            except OSError:
                self._slots.release()
                return
            threading.Thread(target=self._serve, args=(conn,), name="rs-spark-batch-fetch", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                request = self._authenticated_request(conn)
                if request is not None:
                    self._answer(conn, *request)
        except (OSError, ValueError, KeyError, TypeError):
            return  # the client went away or spoke nonsense: say nothing
        finally:
            self._slots.release()

    def _authenticated_request(self, conn: socket.socket) -> Optional[Tuple[int, int, int]]:
        conn.settimeout(self._auth_timeout)
        n = _LEN.unpack(_recv_exact(conn, 4))[0]
        if n > _MAX_REQUEST:
            return None  # checked before anything of that size is read
        req = json.loads(_recv_exact(conn, n))
        k, lo, hi = int(req["key"]), int(req["lo"]), int(req["hi"])
        if not hmac.compare_digest(bytes.fromhex(str(req["mac"])), _mac(self._secret, k, lo, hi)):
            return None  # not a range any partition was granted
        return k, lo, hi

    def _answer(self, conn: socket.socket, k: int, lo: int, hi: int) -> None:
        conn.settimeout(60)
        try:
            schema, batches = self._lookup(k, lo, hi)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema) as w:
                for b in batches:
                    w.write_batch(b)
            body: Optional[pa.Buffer] = sink.getvalue()
            header: Dict[str, object] = {"ok": True, "bytes": body.size}
        except Exception as exc:  # reported to the executor, which fails the task with it
            body, header = None, {"error": f"{type(exc).__name__}: {exc}"}
        h = json.dumps(header).encode()
        conn.sendall(_LEN.pack(len(h)) + h)
        if body is not None:
            conn.sendall(memoryview(body))

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


def fetch(address: Address, key: int, lo: int, hi: int, connect_timeout: float = 10.0,
          read_timeout: float = 60.0, max_body_bytes: int = MAX_BODY_BYTES) -> List[pa.RecordBatch]:
    """Rows ``[lo, hi)`` stored under ``key`` at ``address``; :class:`FetchError` says why not."""
    errors: Dict[str, str] = {}
    for host in address.candidates():
        try:
            conn = socket.create_connection((host, address.port), timeout=connect_timeout)
        except OSError as exc:
            errors[host] = f"{type(exc).__name__}: {exc}"
            continue
        where = f"{host}:{address.port}"
        with conn:
            try:
                conn.settimeout(read_timeout)
                body = _request(conn, address, key, lo, hi, where, max_body_bytes)
            except (OSError, ValueError) as exc:
                raise FetchError(f"fetching rows [{lo}, {hi}) of {key} from {where} failed: "
                                 f"{type(exc).__name__}: {exc}") from None
        return read_stream(pa.py_buffer(body), f"the batch server at {where} (rows [{lo}, {hi}) of {key})")
    raise FetchError(f"cannot connect to {address!r} from {socket.gethostname()}: {errors}")


def _request(conn: socket.socket, address: Address, key: int, lo: int, hi: int, where: str,
             max_body_bytes: int) -> bytes:
    req = json.dumps({"key": key, "lo": lo, "hi": hi, "mac": address.secret.hex()}).encode()
    conn.sendall(_LEN.pack(len(req)) + req)
    n = _LEN.unpack(_recv_exact(conn, 4))[0]
    if n > _MAX_HEADER:
        raise FetchError(f"the batch server at {where} declared a {n}-byte header (at most {_MAX_HEADER}): not an "
                         "rs_spark batch server")
    header = json.loads(_recv_exact(conn, n))
    if "error" in header:
        raise FetchError(str(header["error"]))
    size = int(header["bytes"])
    if not 0 <= size <= max_body_bytes:
        raise FetchError(f"the batch server at {where} declared {size} bytes for rows [{lo}, {hi}) of {key} (at most "
                         f"{max_body_bytes}): refused before allocating")
    return _recv_exact(conn, size)


__all__ = ["BatchServer", "Address", "FetchError", "fetch", "host_key"]
