"""Dialling a server: the client's :class:`Options` (the ``connect*`` keywords, checked) and the
:class:`Dialler`, which opens connections to one server (a shared one with a plain SETUP, a
resumable one whose SETUP carries more entries, one that starts with RESUME).

What a resumable SETUP asks for is the caller's (:mod:`rs_spark.net.zero_loss`); here it is only
composite metadata entries, so this module stays in the protocol layer.
"""

from __future__ import annotations

import logging
import ssl as _ssl
import threading
from collections.abc import Callable, Sequence

from . import frames as F
from .address import Address
from .auth import setup_metadata
from .codecs import MIMES, make_codec
from .connection import Connection
from .errors import ConnectionLost, Refused
from .limits import Limits
from .metadata import COMPOSITE
from .tls_files import TlsFiles
from .transport import dial

log = logging.getLogger("rs_spark.net.client")  # the name it logged under before it moved here


class Options:
    """Client settings; picklable when ``ssl`` is None (a ``tls://`` address then uses ``tls``, or
    the system CAs)."""

    def __init__(
        self,
        *,
        token: str | None = None,
        ssl: _ssl.SSLContext | None = None,
        tls: TlsFiles | None = None,
        codec: str | None = None,
        keepalive: float = 2.0,
        lifetime: float = 10.0,
        connect_timeout: float = 5.0,
        limits: Limits | None = None,
        batch_rows: int = 65536,
    ) -> None:
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"batch_rows must be an int >= 1, got {batch_rows!r}")
        if keepalive <= 0 or lifetime <= keepalive:
            raise ValueError(f"need 0 < keepalive < lifetime (seconds), got keepalive={keepalive}, lifetime={lifetime}")
        if codec is not None:
            make_codec(codec)  # validate early, with the list of valid names
        if ssl is not None and tls is not None:
            raise ValueError("give ssl= (an SSLContext) or tls= (TlsFiles, picklable), not both")
        self.token = token
        self.ssl = ssl
        self.tls = tls
        self.codec = codec
        self.keepalive = keepalive
        self.lifetime = lifetime
        self.connect_timeout = connect_timeout
        self.limits = limits or Limits()
        self.batch_rows = batch_rows


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_if_token_in_clear_text(address: Address, token: str | None) -> bool:
    """Warn once per address when ``token`` would cross a network unencrypted (``tcp://`` or
    ``ws://`` to a host that is not loopback); returns whether it warned now."""
    if not token or address.scheme not in ("tcp", "ws") or address.is_loopback:
        return False
    with _warned_lock:
        if address.base in _warned:
            return False
        _warned.add(address.base)
    log.warning(
        "rs_spark.net: sending a token to %s over %s:// without TLS: anyone on the network path can "
        "read it and the data; use %s:// with ssl= on untrusted networks",
        address.base,
        address.scheme,
        "tls" if address.scheme == "tcp" else "wss",
    )
    return True


class Dialler:
    """Opens connections to the server at ``address`` with ``opts``, authenticating with ``token``
    and sending elements with codec ``codec``."""

    def __init__(self, address: Address, opts: Options, token: str | None, codec: str) -> None:
        self._addr = address
        self._opts = opts
        self._token = token
        self._codec = codec

    def open(self, resume_token: bytes | None = None, entries: Sequence[tuple[str, bytes]] = ()) -> Connection:
        """A new, started connection whose SETUP carries ``resume_token`` (None: not resumable) and
        the composite metadata ``entries`` beside the token's."""
        conn = self.dial()
        conn.send(self._setup_frame(resume_token, entries))
        conn.start()
        return conn

    def resume(self, token: bytes, position: int, on_push: Callable[[F.Frame], None] | None = None) -> Connection:
        """A new connection continuing the stream of ``token`` from ``position``: blocks until the
        server's RESUME_OK (up to ``connect_timeout``); raises ResumeRejected when it cannot.
        ``on_push``: the connection's METADATA_PUSH handler, set before any frame is read (the
        server states the stream's window right after RESUME_OK)."""
        answered = threading.Event()  # RESUME_OK, or the connection closed (refused)
        conn = self.dial(on_closed=lambda _conn: answered.set())
        conn.on_push = on_push
        conn.on_resumed = lambda _position: answered.set()
        conn.send(F.encode_resume(token, position))
        conn.start()
        timeout = self._opts.connect_timeout
        if not answered.wait(timeout) or conn.closed is not None:
            err = conn.closed
            conn.close(None, final=[])
            if err is not None:
                raise err
            raise ConnectionLost(f"{self._addr.base} did not answer RESUME within {timeout} s", self._addr.base)
        return conn

    def _setup_frame(self, resume_token: bytes | None, entries: Sequence[tuple[str, bytes]]) -> list[F.Buffer]:
        o = self._opts
        return F.encode_setup(
            int(o.keepalive * 1000),
            int(o.lifetime * 1000),
            COMPOSITE,
            MIMES[make_codec(self._codec).name],
            metadata=setup_metadata(self._token, list(entries)),
            resume_token=resume_token,
        )

    def dial(self, on_closed: Callable[[Connection], None] | None = None) -> Connection:
        """A started-to-be connection (not yet started, nothing sent) to this dialler's server."""
        a, o = self._addr, self._opts
        warn_if_token_in_clear_text(a, self._token)
        ctx, hostname = o.ssl, None
        if o.tls is not None:  # built here, in the process that connects, from the files as they are here
            ctx, hostname = o.tls.context(), o.tls.hostname
        try:
            sock = dial(a, o.connect_timeout, ctx, o.limits.max_frame_bytes, hostname)
        except TimeoutError as exc:
            raise ConnectionLost(
                f"could not connect to {a.base} within {o.connect_timeout} s ({exc}); check the "
                "address and that the server is running",
                a.base,
            ) from exc
        except _ssl.SSLError as exc:
            raise Refused(f"TLS with {a.base} failed: {exc}; check ssl= and the server certificate", a.base) from exc
        except OSError as exc:
            raise ConnectionLost(
                f"could not connect to {a.base}: {exc}; check the address and that the server is running", a.base
            ) from exc
        conn = Connection(
            sock,
            client=True,
            label=a.base,
            limits=o.limits,
            keepalive=o.keepalive,
            lifetime=o.lifetime,
            on_closed=on_closed,
        )
        conn.metadata_mime, conn.data_mime = COMPOSITE, MIMES[make_codec(self._codec).name]
        return conn


__all__ = ["Dialler", "Options", "warn_if_token_in_clear_text"]
