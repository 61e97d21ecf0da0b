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
from collections.abc import Callable, Sequence

import pyarrow as pa

from ....arrow.validate import read_stream

_SECRET_LEN = 32
_LEN = struct.Struct(">I")
_MAX_REQUEST = 1024  # a fetch request is ~100 bytes of JSON
_MAX_HEADER = 64 * 1024  # what the client accepts as a response header
MAX_BODY_BYTES = 2**31 - 1  # what the client accepts as one partition's Arrow stream

Lookup = Callable[[int, int, int], tuple[pa.Schema, Sequence[pa.RecordBatch]]]
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


def default_route_address() -> str | None:
    """The address of the interface of the default route, if there is one (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return str(s.getsockname()[0])
    except OSError:
        return None


class FetchGrant:
    """Where a :class:`BatchServer` listens, with one range's credential: picklable, carried inside
    partitions (``secret`` is the HMAC granting that range, never the server's key). Not an RSocket
    address (:mod:`rs_spark.net.protocol.address`): this protocol is the reader process's own."""

    __slots__ = ("host_key", "hosts", "port", "secret")

    def __init__(self, host_key: str, hosts: list[str], port: int, secret: bytes) -> None:
        self.host_key, self.hosts, self.port, self.secret = host_key, hosts, port, secret

    def __getstate__(self) -> tuple:
        return (self.host_key, self.hosts, self.port, self.secret)

    def __setstate__(self, state: tuple) -> None:
        self.host_key, self.hosts, self.port, self.secret = state

    def candidates(self) -> list[str]:
        if self.host_key == host_key():
            return ["127.0.0.1"]
        return list(self.hosts)

    def __repr__(self) -> str:  # never show the credential
        return f"FetchGrant(hosts={self.hosts}, port={self.port})"


def _mac(key: bytes, k: int, lo: int, hi: int) -> bytes:
    return hmac.new(key, f"{k}:{lo}:{hi}".encode(), "sha256").digest()


class BatchServer:
    """A daemon-thread TCP server answering fetches with ``lookup(key, lo, hi)``."""

    def __init__(
        self, lookup: Lookup, binds: Sequence[str] = ("127.0.0.1",), max_handlers: int = 8, auth_timeout: float = 5.0
    ) -> None:
        """Listen on one port at each address of ``binds`` (loopback only by default).

        Executors on this host connect to 127.0.0.1; executors on other hosts need a
        non-loopback address in ``binds``, which is also what the server advertises. A
        wildcard address is refused: it would expose the rows on every interface.
        """
        if not binds or any(b in ("0.0.0.0", "::", "") for b in binds):
            raise ValueError(
                f"BatchServer binds={list(binds)!r}: name the interfaces to listen on (a wildcard "
                "would serve the rows on every interface)"
            )
        self._lookup = lookup
        self._secret = secrets.token_bytes(_SECRET_LEN)
        self._auth_timeout = auth_timeout
        self._slots = threading.BoundedSemaphore(max_handlers)
        self._closed = False
        self._socks = _listen_all(binds)
        port = self._socks[0].getsockname()[1]
        advertised = [b for b in binds if not b.startswith("127.")]
        self.address = FetchGrant(host_key(), advertised, port, b"")  # where it listens, granting nothing
        self._threads = [
            threading.Thread(target=self._accept_loop, args=(s,), name="rs-spark-batch-server", daemon=True)
            for s in self._socks
        ]
        for t in self._threads:
            t.start()

    def grant(self, key: int, lo: int, hi: int) -> FetchGrant:
        """Where it listens, with the credential for rows ``[lo, hi)`` of ``key`` (and nothing else)."""
        a = self.address
        return FetchGrant(a.host_key, a.hosts, a.port, _mac(self._secret, key, lo, hi))

    def _accept_loop(self, sock: socket.socket) -> None:
        while not self._closed:
            self._slots.acquire()  # at most max_handlers at once: the rest wait in the backlog
            try:
                conn, _ = sock.accept()
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

    def _authenticated_request(self, conn: socket.socket) -> tuple[int, int, int] | None:
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
            buf = sink.getvalue()
            body: pa.Buffer | None = buf
            header: dict[str, object] = {"ok": True, "bytes": buf.size}
        except Exception as exc:  # reported to the executor, which fails the task with it
            body, header = None, {"error": f"{type(exc).__name__}: {exc}"}
        h = json.dumps(header).encode()
        conn.sendall(_LEN.pack(len(h)) + h)
        if body is not None:
            conn.sendall(memoryview(body))

    def close(self) -> None:
        self._closed = True
        for sock in self._socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() in the server thread
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass


def _listen_all(binds: Sequence[str]) -> list[socket.socket]:
    """One listening socket per address, all on the same port (chosen by the first bind)."""
    socks: list[socket.socket] = []
    port = 0
    try:
        for host in dict.fromkeys(binds):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            s.listen(64)
            port = s.getsockname()[1]
    except OSError as exc:
        for s in socks:
            s.close()
        raise OSError(
            f"the reactive source's batch server cannot listen on {host}:{port} ({exc}); set "
            "SPARK_LOCAL_IP or spark.driver.host to an address of this host"
        ) from exc
    return socks


def _recv_exact(conn: socket.socket, n: int) -> bytes | bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = conn.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError(f"connection closed after {got} of {n} bytes")
        got += k
    return bytes(buf) if n <= 4096 else buf  # a big body is not copied again


def fetch(
    grant: FetchGrant,
    key: int,
    lo: int,
    hi: int,
    connect_timeout: float = 10.0,
    read_timeout: float = 60.0,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> list[pa.RecordBatch]:
    """Rows ``[lo, hi)`` stored under ``key`` at the server of ``grant``; :class:`FetchError` says why not."""
    errors: dict[str, str] = {}
    for host in grant.candidates():
        try:
            conn = socket.create_connection((host, grant.port), timeout=connect_timeout)
        except OSError as exc:
            errors[host] = f"{type(exc).__name__}: {exc}"
            continue
        where = f"{host}:{grant.port}"
        with conn:
            try:
                conn.settimeout(read_timeout)
                body = _request(conn, grant, key, lo, hi, where, max_body_bytes)
            except (OSError, ValueError) as exc:
                raise FetchError(
                    f"fetching rows [{lo}, {hi}) of {key} from {where} failed: {type(exc).__name__}: {exc}"
                ) from exc
        return read_stream(pa.py_buffer(body), f"the batch server at {where} (rows [{lo}, {hi}) of {key})")
    raise FetchError(f"cannot connect to {grant!r} from {socket.gethostname()}: {errors}")


def _request(
    conn: socket.socket, grant: FetchGrant, key: int, lo: int, hi: int, where: str, max_body_bytes: int
) -> bytes | bytearray:
    req = json.dumps({"key": key, "lo": lo, "hi": hi, "mac": grant.secret.hex()}).encode()
    conn.sendall(_LEN.pack(len(req)) + req)
    n = _LEN.unpack(_recv_exact(conn, 4))[0]
    if n > _MAX_HEADER:
        raise FetchError(
            f"the batch server at {where} declared a {n}-byte header (at most {_MAX_HEADER}): not an "
            "rs_spark batch server"
        )
    header = json.loads(_recv_exact(conn, n))
    if "error" in header:
        raise FetchError(str(header["error"]))
    size = int(header["bytes"])
    if not 0 <= size <= max_body_bytes:
        raise FetchError(
            f"the batch server at {where} declared {size} bytes for rows [{lo}, {hi}) of {key} (at most "
            f"{max_body_bytes}): refused before allocating"
        )
    return _recv_exact(conn, size)


__all__ = ["BatchServer", "FetchError", "FetchGrant", "fetch", "host_key"]
