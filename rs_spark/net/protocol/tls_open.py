"""A TLS connection opened over a socket: the client's handshake, done before it returns, with a
failure said in words that name what to check (the server's certificate, the name checked, whether
TLS is served at all); the server's, deferred to the first read (:class:`.tls.TlsSocket`)."""

from __future__ import annotations

import socket
import ssl as _ssl

from .tls import TlsSocket
from .tls_files import CA_FILE, HOSTNAME


def tls_client(
    raw: socket.socket, context: _ssl.SSLContext, hostname: str | None, label: str, timeout: float
) -> TlsSocket:
    """TLS over a connected socket, handshake done: returns the socket to use
    (raises ``ssl.SSLError`` saying what to check if the handshake failed or took too long)."""
    try:
        sock = TlsSocket(raw, context, server_side=False, hostname=hostname, label=label, handshake_timeout=timeout)
        sock.handshake()
    except (_ssl.SSLError, OSError) as exc:
        raw.close()
        raise _handshake_error(exc, label, timeout) from None
    except BaseException:
        raw.close()
        raise
    return sock


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


def tls_server(raw: socket.socket, context: _ssl.SSLContext, label: str, timeout: float) -> TlsSocket:
    """TLS on an accepted socket: returns at once; the handshake runs on the first read, within
    ``timeout`` (a failed or slow one reads as EOF, logged)."""
    try:
        return TlsSocket(raw, context, server_side=True, hostname=None, label=label, handshake_timeout=timeout)
    except BaseException:
        raw.close()
        raise


__all__ = ["tls_client", "tls_server"]
