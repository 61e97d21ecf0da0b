"""TLS for a connection, on a thread of its own (:class:`TlsPump`).

OpenSSL forbids using one SSL object from two threads at once, and a Connection reads on one
thread and writes on another. So a TLS connection gets one more thread, the *pump*, which is
the only one that touches the SSL object and the network socket: it moves ciphertext between
the TCP socket and an ``ssl.MemoryBIO`` pair, and plaintext between the SSL object and one end of
a local socketpair. The Connection gets the other end, a plain socket, and runs exactly as it
does for TCP (same threads, same sendmsg/recv_into paths).

The pump moves bytes in two directions, each a :class:`_Direction` with its own buffer and
state: network -> app (decrypted) and app -> network (encrypted). Both buffers are bounded
(``_TLS_LIMIT`` bytes each: a full buffer stops reading its source), so a peer that stops reading
stalls the writer as a full TCP socket would. Half-closes travel in order: the peer's EOF (or
close_notify) reaches the app once the bytes before it are delivered; the app's EOF becomes
close_notify and a FIN once the bytes before it are sent. Once the app has closed both ways the
pump keeps reading the peer for ``_LINGER`` seconds, so our last bytes are not lost to a reset.
"""

from __future__ import annotations

import enum
import logging
import select
import socket
import ssl as _ssl
import threading
import time

from ...streams.errors import throw_if_fatal
from .tls_files import CA_FILE, HOSTNAME

log = logging.getLogger("rs_spark.net")

_TLS_CHUNK = 256 * 1024  # most bytes read from either socket at once
_TLS_LIMIT = 1024 * 1024  # most bytes buffered per direction before its source is no longer read
_LINGER = 2.0  # seconds a closed connection keeps reading the peer, so our last bytes are not reset
_HANGUP = select.POLLHUP | select.POLLERR
_READABLE = select.POLLIN | _HANGUP


class _State(enum.Enum):
    """Where one direction is: which of its source (read) and sink (written) are still open."""

    OPEN = "open"
    """Reading the source, writing the sink."""
    DRAINING = "draining"
    """The source ended: what is buffered still goes to the sink, which is then shut for writing."""
    DISCARDING = "discarding"
    """The sink is gone: the source is still read (it may say it closed) and what it sends is dropped."""
    CLOSED = "closed"


class _Direction:
    """Bytes on their way from one socket to the other: a buffer and a :class:`_State`."""

    __slots__ = ("state", "_buf", "_off")

    def __init__(self) -> None:
        self.state = _State.OPEN
        self._buf = bytearray()
        self._off = 0  # bytes at the front of _buf already sent

    @property
    def reading(self) -> bool:
        """The source is still read."""
        return self.state in (_State.OPEN, _State.DISCARDING)

    @property
    def writing(self) -> bool:
        """The sink still takes bytes."""
        return self.state in (_State.OPEN, _State.DRAINING)

    @property
    def queued(self) -> int:
        """Bytes buffered and not yet sent."""
        return len(self._buf) - self._off

    @property
    def has_room(self) -> bool:
        """Below the per-direction bound: the source may be read."""
        return self.queued < _TLS_LIMIT

    @property
    def drained(self) -> bool:
        """The source ended and everything before its end was sent: time to shut the sink."""
        return self.state is _State.DRAINING and not self.queued

    def add(self, data: bytes | bytearray | memoryview) -> None:
        """Buffer ``data`` for the sink; dropped once the sink is gone."""
        if self.writing:
            self._buf += data

    def source_ended(self) -> None:
        """The source was closed (EOF, close_notify, or an error reading it)."""
        if self.state is _State.OPEN:
            self.state = _State.DRAINING
        elif self.state is _State.DISCARDING:
            self.state = _State.CLOSED

    def sink_gone(self) -> None:
        """The sink cannot be written any more: what is buffered is dropped."""
        if self.state is _State.OPEN:
            self.state = _State.DISCARDING
        elif self.state is _State.DRAINING:
            self.state = _State.CLOSED
        self._buf.clear()
        self._off = 0

    def sink_shut(self) -> None:
        """Called once :attr:`drained`: the sink was shut for writing."""
        self.state = _State.CLOSED

    def send_to(self, sock: socket.socket) -> None:
        """Send what the non-blocking ``sock`` takes now; raises what ``send`` raises."""
        try:
            self._off += sock.send(memoryview(self._buf)[self._off :])
        finally:
            if self._off >= len(self._buf):
                self._buf.clear()
                self._off = 0
            elif self._off > _TLS_LIMIT:  # compact now and then, not after every send
                del self._buf[: self._off]
                self._off = 0


class TlsPump:
    """Runs TLS for one connection on one thread; :attr:`app` is the plain socket to use."""

    def __init__(
        self,
        raw: socket.socket,
        context: _ssl.SSLContext,
        *,
        server_side: bool,
        hostname: str | None,
        label: str,
        handshake_timeout: float,
    ) -> None:
        self.label = label
        self.error: BaseException | None = None
        self.ready = False  # the handshake succeeded
        self.handshaken = threading.Event()  # the handshake ended (``ready`` says how)
        self._server_side = server_side
        self._raw = raw
        self._timeout = handshake_timeout
        self._deadline = 0.0  # for the handshake, set when the thread starts
        self._linger: float | None = None  # set once the app closed both ways
        self._in = _ssl.MemoryBIO()
        self._outb = _ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._outb, server_side=server_side, server_hostname=hostname)
        self._to_app = _Direction()  # source: the network socket (decrypted); sink: the app's pair
        self._to_net = _Direction()  # source: the app's pair (encrypted); sink: the network socket
        self._scratch = memoryview(bytearray(_TLS_CHUNK))  # every read lands here first
        self.app, self._pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for s in (self.app, self._pair):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _TLS_CHUNK * 2)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _TLS_CHUNK * 2)
        raw.setblocking(False)
        self._pair.setblocking(False)
        self._raw_fd, self._pair_fd = raw.fileno(), self._pair.fileno()
        self._poller = select.poll()
        self._poller.register(self._raw_fd, 0)
        self._poller.register(self._pair_fd, 0)
        self._thread = threading.Thread(target=self._run, name=f"rs-net-tls {label}", daemon=True)
        self._thread.start()

    def abort(self) -> None:
        """Stop at once (e.g. the handshake took too long): the pump closes both sockets."""
        try:
            self.app.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # -- the thread ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # never let a TLS failure pass silently
            # No user code runs here. A fatal error ends the thread all the same: the finally
            # closes both sockets, so the connection reads EOF and ends its streams.
            throw_if_fatal(exc)
            self._report(exc)
        finally:
            self.handshaken.set()
            for s in (self._pair, self._raw):
                try:
                    s.close()
                except OSError:
                    pass

    def _report(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
        if not self.ready:
            self._flush_alert()
            if self._server_side:
                log.warning(
                    "rs_spark.net: TLS handshake with %s failed: %s; the connection was closed "
                    "(a client without TLS, an untrusted certificate, or a slow client)",
                    self.label,
                    exc,
                )
        elif not isinstance(exc, (OSError, _ssl.SSLError)):
            log.exception("rs_spark.net: the TLS thread of %s failed", self.label)

    def _loop(self) -> None:
        self._deadline = time.monotonic() + self._timeout
        self._step_handshake()
        while True:
            if self._outb.pending:  # handshake messages, records, alerts, close_notify
                self._to_net.add(self._outb.read())
            self._finish_half_closes()
            if self._finished():
                return
            self._set_interest()
            for fd, ev in self._poller.poll(self._poll_timeout()):
                if fd == self._raw_fd:
                    self._on_network(ev)
                else:
                    self._on_app(ev)

    # -- steps of one turn --------------------------------------------------------------
    def _step_handshake(self) -> None:
        try:
            self._ssl.do_handshake()
        except _ssl.SSLWantReadError:
            return
        self.ready = True
        self.handshaken.set()

    def _finish_half_closes(self) -> None:
        """A direction whose source ended and whose bytes are all delivered shuts its sink:
        the app then reads EOF, or the peer gets our close_notify followed by a FIN."""
        if self._to_app.drained:
            _shut(self._pair, socket.SHUT_WR)
            self._to_app.sink_shut()
        if self._to_net.drained:
            _shut(self._raw, socket.SHUT_WR)
            self._to_net.sink_shut()

    def _finished(self) -> bool:
        to_app, to_net = self._to_app, self._to_net
        if not to_net.reading and not to_app.writing:  # the app closed both ways
            if self._linger is None:
                self._linger = time.monotonic() + _LINGER
                self._poller.unregister(self._pair_fd)  # it would report POLLHUP for ever
            peer_done = not to_app.reading and (not to_net.writing or not to_net.queued)
            if peer_done or time.monotonic() > self._linger:
                return True
        return not to_app.reading and not to_net.writing and not to_app.writing

    def _set_interest(self) -> None:
        to_app, to_net = self._to_app, self._to_net
        raw = 0
        if to_app.reading and to_app.has_room:
            raw |= select.POLLIN
        if to_net.writing and to_net.queued:
            raw |= select.POLLOUT
        self._poller.modify(self._raw_fd, raw)
        if self._linger is None:  # the pair is still registered
            pair = 0
            if to_net.reading and self.ready and to_net.has_room:
                pair |= select.POLLIN
            if to_app.writing and to_app.queued:
                pair |= select.POLLOUT
            self._poller.modify(self._pair_fd, pair)

    def _poll_timeout(self) -> int | None:
        """Milliseconds to wait: until the handshake deadline or the end of the linger, else for ever."""
        now = time.monotonic()
        if not self.ready:
            if now > self._deadline:
                raise TimeoutError(f"TLS handshake with {self.label} did not finish within {self._timeout} s")
            return int((self._deadline - now) * 1000) + 1
        if self._linger is not None:
            return int(max(0.0, self._linger - now) * 1000) + 1
        return None

    # -- the network socket -------------------------------------------------------------
    def _on_network(self, ev: int) -> None:
        if ev & _READABLE and self._to_app.reading:
            self._read_network()
        elif ev & _HANGUP and not self._to_app.reading:
            self._to_net.sink_gone()  # reset, or both directions shut: nothing more can be sent
        if ev & select.POLLOUT and self._to_net.writing and self._to_net.queued:
            try:
                self._to_net.send_to(self._raw)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                self._network_failed(exc)

    def _read_network(self) -> None:
        view = self._scratch
        try:
            n = self._raw.recv_into(view)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._network_failed(exc)
            return
        if n == 0:
            self._to_app.source_ended()
            return
        self._in.write(view[:n])
        if not self.ready:
            self._step_handshake()
        if self.ready and not self._decrypt():
            self._to_app.source_ended()  # the peer sent close_notify

    def _network_failed(self, exc: OSError) -> None:
        self.error = self.error or exc
        self._to_app.source_ended()
        self._to_net.sink_gone()

    def _decrypt(self) -> bool:
        """Plaintext available now to the app; False once the peer sent close_notify."""
        while True:
            try:
                data = self._ssl.read(_TLS_CHUNK)
            except _ssl.SSLWantReadError:
                return True
            except _ssl.SSLZeroReturnError:
                return False
            if not data:
                return False
            self._to_app.add(data)

    # -- the app's socket ---------------------------------------------------------------
    def _on_app(self, ev: int) -> None:
        if not self.ready:
            if ev & _HANGUP:
                raise ConnectionAbortedError(f"the connection to {self.label} was closed during the TLS handshake")
            return
        if ev & select.POLLOUT and self._to_app.writing and self._to_app.queued:
            try:
                self._to_app.send_to(self._pair)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._to_app.sink_gone()
        if ev & _READABLE and self._to_net.reading:
            self._read_app()
        if ev & _HANGUP and not self._to_net.reading:
            self._to_app.sink_gone()  # the app closed its socket: nobody reads what the peer sends

    def _read_app(self) -> None:
        view = self._scratch
        try:
            n = self._pair.recv_into(view)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            n = 0
        if n:
            self._ssl.write(view[:n])
            return
        self._to_net.source_ended()
        if self._to_net.writing:  # queue close_notify: the FIN follows once it is sent
            try:
                self._ssl.unwrap()
            except (_ssl.SSLWantReadError, _ssl.SSLError, ValueError):
                pass

    def _flush_alert(self) -> None:
        # Best effort: the peer learns why (e.g. "unknown ca") instead of seeing a bare reset.
        try:
            data = self._outb.read()
            if data:
                self._raw.send(data)
        except (OSError, ValueError):
            pass


def _shut(sock: socket.socket, how: int) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass


def tls_client(
    raw: socket.socket, context: _ssl.SSLContext, hostname: str | None, label: str, timeout: float
) -> socket.socket:
    """TLS over a connected socket, handshake done: returns the plain socket to use
    (raises ``ssl.SSLError`` saying what to check if the handshake failed or took too long)."""
    try:
        pump = TlsPump(raw, context, server_side=False, hostname=hostname, label=label, handshake_timeout=timeout)
    except BaseException:
        raw.close()
        raise
    if not pump.handshaken.wait(timeout + 1.0):
        pump.abort()
        pump.error = TimeoutError()
    if not pump.ready:
        pump.abort()
        raise _handshake_error(pump.error, label, timeout)
    return pump.app


_NAME_MISMATCH = (62, 64)  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH


def _handshake_error(err: BaseException | None, label: str, timeout: float) -> _ssl.SSLError:
    if isinstance(err, TimeoutError):
        return _ssl.SSLError(
            0,
            f"the handshake did not finish within {timeout} s: is {label} serving TLS "
            "(a tcp:// server never answers a TLS client), and not overloaded?",
        )
    if isinstance(err, _ssl.SSLCertVerificationError) and err.verify_code in _NAME_MISMATCH:
        return _ssl.SSLError(
            0,
            f"{err.verify_message or err}: the certificate of {label} does not list the name this client "
            "checks; connect with a name it lists, or give the name to check: option "
            f"{HOSTNAME} (rs_spark.net: tls=TlsFiles(hostname=...))",
        )
    if isinstance(err, _ssl.SSLCertVerificationError):
        return _ssl.SSLError(
            0,
            f"{err.verify_message or err}: this client does not trust the certificate of "
            f"{label}; "
            "pass ssl=ssl.create_default_context(cafile='server-cert.pem') with the server's "
            f"certificate or the CA that signed it (Spark: option {CA_FILE}='server-cert.pem')",
        )
    return _ssl.SSLError(0, f"{err}: is {label} serving TLS (a tcp:// server cannot answer a TLS client)?")


def tls_server(raw: socket.socket, context: _ssl.SSLContext, label: str, timeout: float) -> socket.socket:
    """TLS on an accepted socket: returns the plain socket at once; the handshake runs on the
    connection's TLS thread (a failed or slow one closes that socket, logged)."""
    try:
        pump = TlsPump(raw, context, server_side=True, hostname=None, label=label, handshake_timeout=timeout)
    except BaseException:
        raw.close()
        raise
    return pump.app


__all__ = ["TlsPump", "tls_client", "tls_server"]
