"""The client side of TLS as users configure it: the options ``tlsCaFile``, ``tlsCertFile``,
``tlsKeyFile`` and ``tlsHostname`` (:class:`TlsFiles`), the same names and meaning as the JVM's
``rsspark.rsocket.TlsSettings``, checked when given and turned into an ``ssl.SSLContext`` in each
process that connects. The TLS connection itself is :mod:`.tls`."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
import ssl as _ssl
from collections.abc import Mapping
from typing import Any

from .address import Address

CA_FILE, CERT_FILE, KEY_FILE, HOSTNAME = "tlsCaFile", "tlsCertFile", "tlsKeyFile", "tlsHostname"
TLS_OPTIONS: dict[str, str] = {
    CA_FILE: "tls:// endpoints: PEM file of the certificates (the server's own, or the CA that signed it) the "
    "server's certificate is verified against (default: the system's trust store)",
    CERT_FILE: "tls:// endpoints: PEM file of this client's certificate (chain), for a server that asks for one",
    KEY_FILE: "tls:// endpoints: PEM file of tlsCertFile's private key (PKCS#8, unencrypted; default: the key in "
    "tlsCertFile)",
    HOSTNAME: "tls:// endpoints: the name the server's certificate must list (default: the endpoint's host)",
}
"""The client TLS options of the ``reactive`` and ``reactive-rt`` formats (same names and meaning as
the JVM's ``rsspark.rsocket.TlsSettings``), each with what it does."""

TLS_SCHEMES = ("tls", "wss")
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\s]*)-----END \1-----")
_CONVERT = "convert it with: openssl pkey -in KEY.pem -out KEY-pkcs8.pem"


@dataclasses.dataclass(frozen=True, slots=True)
class TlsFiles:
    """How a ``tls://`` client trusts its server and, optionally, proves who it is: the options
    ``tlsCaFile``, ``tlsCertFile``, ``tlsKeyFile`` and ``tlsHostname`` as file paths and a name.

    Picklable (an ``SSLContext`` is not): each process that connects builds its own with
    :meth:`context`, from the files as they are there. The server is always verified: its chain
    against ``ca_file`` (else the system's trust store), its name against ``hostname`` (else the
    address's host)."""

    ca_file: str | None = None
    """PEM certificates to trust; None: the system's trust store."""
    cert_file: str | None = None
    key_file: str | None = None
    """The client certificate (chain) and its PKCS#8 key (None: the key is in ``cert_file``);
    no client certificate when ``cert_file`` is None."""
    hostname: str | None = None
    """The name the server's certificate must list; None: the address's host."""

    def __post_init__(self) -> None:
        if self.key_file is not None and self.cert_file is None:
            raise ValueError(
                f"option {KEY_FILE} is the key of a client certificate: give option {CERT_FILE} "
                "(the certificate's PEM file) too"
            )

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> TlsFiles | None:
        """The TLS options among ``options`` (keys lower-cased); None when none is given."""

        def get(name: str) -> str | None:
            value = options.get(name.lower())
            return (str(value).strip() or None) if value is not None else None

        files = cls(get(CA_FILE), get(CERT_FILE), get(KEY_FILE), get(HOSTNAME))
        return None if files == cls() else files

    @property
    def given(self) -> str:
        """The first option given, to name in an error."""
        names = ((CA_FILE, self.ca_file), (CERT_FILE, self.cert_file), (HOSTNAME, self.hostname))
        return next((name for name, value in names if value is not None), CA_FILE)

    def check_used_by(self, address: Address) -> None:
        """Refuse these options for an address that is not ``tls://`` or ``wss://``: they would be
        ignored, and the user meant the connection to be encrypted."""
        if address.scheme not in TLS_SCHEMES:
            raise ValueError(
                f"option {self.given} applies to tls:// endpoints, but the endpoint is {address.format()}: serve "
                "it on tls:// and give that address (or drop the TLS options)"
            )

    def context(self) -> _ssl.SSLContext:
        """A client context from the files, read now: server verification and host-name checking
        on. Raises ``ValueError`` naming the option and file when one cannot be used."""
        ctx = _ssl.create_default_context(_ssl.Purpose.SERVER_AUTH)
        if self.ca_file is not None:
            _certificates(CA_FILE, self.ca_file)
            _load(CA_FILE, self.ca_file, lambda: ctx.load_verify_locations(cafile=self.ca_file))
        if self.cert_file is not None:
            _certificates(CERT_FILE, self.cert_file)
            key_option, key_file = (KEY_FILE, self.key_file) if self.key_file else (CERT_FILE, self.cert_file)
            _private_key(key_option, key_file)
            _load(key_option, key_file, lambda: ctx.load_cert_chain(self.cert_file or "", key_file))
        return ctx


def _read(option: str, file: str) -> str:
    try:
        with open(file, encoding="ascii", errors="replace") as f:
            return f.read(16 * 1024 * 1024)  # bounded: a PEM file is a few kilobytes
    except OSError as exc:
        raise ValueError(
            f"option {option}='{file}' cannot be read ({exc}); give the path of a PEM file readable on the "
            "driver and every executor"
        ) from exc


def _blocks(option: str, file: str) -> list[tuple[str, bytes]]:
    """The PEM blocks of ``file``: (type, DER bytes)."""
    out = []
    for m in _PEM.finditer(_read(option, file)):
        try:
            out.append((m.group(1), base64.b64decode("".join(m.group(2).split()), validate=True)))
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"option {option}='{file}': its '{m.group(1)}' block is not valid base64") from exc
    return out


def _certificates(option: str, file: str) -> None:
    if not any(kind == "CERTIFICATE" for kind, _ in _blocks(option, file)):
        raise ValueError(
            f"option {option}='{file}' holds no PEM certificate ('-----BEGIN CERTIFICATE-----'); give a PEM file "
            "of X.509 certificates"
        )


def _private_key(option: str, file: str) -> None:
    """Refuse any key but an unencrypted PKCS#8 one, as the JVM client does: the same files work in both."""
    for kind, _ in _blocks(option, file):
        if kind == "PRIVATE KEY":
            return
        if kind.endswith("PRIVATE KEY"):
            raise ValueError(
                f"option {option}='{file}' holds a '-----BEGIN {kind}-----' key; rs_spark reads unencrypted "
                f"PKCS#8 keys ('-----BEGIN PRIVATE KEY-----'): {_CONVERT}"
            )
    where = f"; give the key's file as option {KEY_FILE}" if option == CERT_FILE else ""
    raise ValueError(f"option {option}='{file}' holds no PEM private key ('-----BEGIN PRIVATE KEY-----'){where}")


def _load(option: str, file: str, load: Any) -> None:
    try:
        load()
    except (_ssl.SSLError, OSError) as exc:
        raise ValueError(
            f"option {option}='{file}' cannot be used ({exc}); give a PEM file of X.509 certificates "
            "(and, for a client certificate, the matching PKCS#8 key)"
        ) from exc


__all__ = ["TlsFiles", "TLS_OPTIONS", "TLS_SCHEMES", "CA_FILE", "CERT_FILE", "KEY_FILE", "HOSTNAME"]
