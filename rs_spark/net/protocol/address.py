"""Endpoint addresses as plain strings: ``tcp://host:port/name``, ``tls://host:port/name``,
``unix:///path/to.sock/name``, ``ws://host:port/name``, ``wss://host:port/name`` (WebSocket,
plain or over TLS), each optionally ``?token=...&codec=...``.

A string survives pickling and fits in a Spark option. The name is the last path segment;
for ``unix`` everything before it is the socket path.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, quote, unquote, urlencode

SCHEMES = ("tcp", "tls", "unix", "ws", "wss")
_KNOWN_QUERY = ("token", "codec")


@dataclass(frozen=True)
class Address:
    """A parsed address; ``str(addr)`` gives it back (without the token unless ``with_token``)."""

    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""  # unix socket path
    name: str | None = None
    token: str | None = field(default=None, repr=False)  # repr() never shows it
    codec: str | None = None

    @property
    def base(self) -> str:
        """Where to connect, without name or query: ``tcp://host:port`` (``[v6]`` hosts in brackets)
        or ``unix:///path/to.sock``."""
        if self.scheme == "unix":
            return f"unix://{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def format(self, with_token: bool = False) -> str:
        """The address string: :attr:`base`, ``/name`` (quoted) and the query; the token only with
        ``with_token`` (keep such strings out of logs)."""
        s = self.base
        if self.name is not None:
            s += "/" + quote(self.name, safe="")
        return s + self.query(with_token)

    def query(self, with_token: bool = False) -> str:
        """The ``?token=...&codec=...`` part ('' when empty)."""
        q: dict[str, str] = {}
        if with_token and self.token:
            q["token"] = self.token
        if self.codec:
            q["codec"] = self.codec
        return "?" + urlencode(q) if q else ""

    def __str__(self) -> str:
        return self.format(with_token=False)  # tokens stay out of logs and error messages

    def with_name(self, name: str | None) -> Address:
        """A copy naming endpoint ``name`` (None: no endpoint)."""
        return replace(self, name=name)

    def with_token(self, token: str | None) -> Address:
        """A copy carrying ``token`` (None: none)."""
        return replace(self, token=token)

    def with_codec(self, codec: str | None) -> Address:
        """A copy asking for ``codec`` (None: the client's default, ``json``)."""
        return replace(self, codec=codec)

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can reach it: a Unix socket, ``localhost`` or a loopback IP
        (a host name other than ``localhost`` counts as remote: it is not resolved)."""
        if self.scheme == "unix":
            return True
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


_HINT = (
    "expected 'tcp://HOST:PORT/NAME', 'tls://HOST:PORT/NAME', 'ws://HOST:PORT/NAME', "
    "'wss://HOST:PORT/NAME' or 'unix:///PATH/TO.sock/NAME', "
    "optionally followed by '?token=...&codec=json|text|bytes|arrow'"
)


def parse(address: str, *, need_name: bool = True) -> Address:
    """Parse an address string; ``ValueError`` says what is wrong and shows the expected forms."""
    if not isinstance(address, str):
        raise TypeError(f"an address is a str such as 'tcp://127.0.0.1:7878/name', got {type(address).__name__}")
    shown = redact(address)  # errors never show the token
    scheme, sep, rest = address.partition("://")
    if not sep or scheme not in SCHEMES:
        raise ValueError(f"address {redact_address(address)!r} has no known scheme ({', '.join(SCHEMES)}): {_HINT}")
    rest, _, query = rest.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if set(params) - set(_KNOWN_QUERY):  # not named: a token misspelt as a name's value would show
        raise ValueError(
            f"address {_cut(address)!r} has a query parameter other than token= and codec=; check their "
            f"spelling: {_HINT}"
        )
    if scheme == "unix":
        addr = _parse_unix(rest, shown, need_name)
    else:
        addr = _parse_network(scheme, rest, shown, need_name)
    return replace(addr, token=params.get("token") or None, codec=params.get("codec") or None)


def _parse_unix(rest: str, shown: str, need_name: bool) -> Address:
    """``/path/to.sock/name`` (the name last) or, without ``need_name``, ``/path/to.sock``."""
    if not rest.startswith("/"):
        raise ValueError(f"address {shown!r}: a unix socket path must be absolute: {_HINT}")
    if not need_name:
        return Address("unix", path=rest)
    path, _, raw = rest.rpartition("/")
    if not raw or not path:
        raise ValueError(f"address {shown!r} names no endpoint after the socket path: {_HINT}")
    return Address("unix", path=path, name=unquote(raw))


def _parse_network(scheme: str, rest: str, shown: str, need_name: bool) -> Address:
    """``host:port/name`` or ``[v6 host]:port/name``; the name is optional without ``need_name``."""
    hostport, slash, raw = rest.partition("/")
    name = unquote(raw) if slash and raw else None
    if need_name and not name:
        raise ValueError(f"address {shown!r} names no endpoint: {_HINT}")
    if name and "/" in raw:
        raise ValueError(f"address {shown!r}: the endpoint name must be one path segment (quote '/' as %2F): {_HINT}")
    if hostport.startswith("["):
        host, _, port_s = hostport[1:].partition("]:")
    else:
        host, _, port_s = hostport.rpartition(":")
    try:
        port = int(port_s)
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:  # int()'s own message would only repeat the port
        raise ValueError(f"address {shown!r} has no valid port: {_HINT}") from None
    if not host:
        raise ValueError(f"address {shown!r} has no host: {_HINT}")
    return Address(scheme, host=host, port=port, name=name)


# ``token=`` or its URL-encoded ``token%3D`` (any case) and the value up to what ends a query
# parameter or an item of a comma-separated list of endpoints; and a ``'token': '...'`` mapping
# entry (an options dict in a message). Too much redacted is harmless; too little is a leak.
_TOKEN_PLAIN = re.compile(r"(token=)[^&,\s'\"]+", re.IGNORECASE)
_TOKEN_QUOTED = re.compile(r"""(token\s*=\s*['"])[^'"]*""", re.IGNORECASE)  # a repr's token='...'

_TOKEN_ENCODED = re.compile(r"(token%3D)(?:(?!%26|%2C)[^&,\s'\"])*", re.IGNORECASE)
_TOKEN_ENTRY = re.compile(r"""(['"]token['"]\s*:\s*['"])[^'"]*""", re.IGNORECASE)
REDACTED = "***"


def redact(text: str) -> str:
    """``text`` with every ``token=`` value replaced by ``***``: the one form for logs, errors and
    progress. ``text`` may be an address, several comma-separated (each keeps its place), an
    address URL-encoded (``token%3D...``) or any message holding them."""
    text = str(text)
    for pattern in (_TOKEN_PLAIN, _TOKEN_QUOTED, _TOKEN_ENCODED, _TOKEN_ENTRY):
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


_RECOGNISED = re.compile("(?:" + "|".join(SCHEMES) + ")://")
_CUT = re.compile(r"[?=]|%3[DdFf]")  # '?' or '=', or either URL-encoded
PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")
"""What a partition id in a list of endpoints is made of: letters, digits, '_', '-' and '.'."""


def redact_address(value: str) -> str:
    """How errors and logs show one address a user gave: a recognised one (a known ``scheme://``) with
    its token redacted (:func:`redact`); any other value only up to its first ``?`` or ``=``, then
    ``***``: what we cannot read may hold a token after them under any name (``tcp//h:1/x?token=...``,
    its colon missing, reads as no address at all)."""
    text = str(value)
    return redact(text) if _RECOGNISED.match(text.strip()) else _cut(text)


def _cut(text: str) -> str:
    """``text`` up to its first ``?`` or ``=`` (URL-encoded too), then ``***``; tokens redacted."""
    cut = _CUT.search(text)
    return redact(text[: cut.end()] + REDACTED if cut else text)


def split_endpoint(item: str) -> tuple[str | None, str]:
    """One item of a comma-separated list of endpoints: ``id=address`` -> ``(id, address)`` when the
    text before its first ``=`` is a plain name (:data:`PLAIN_NAME`); any other item is an address:
    ``(None, item)`` (so ``tcp//h:1/x?token=...`` is an address, malformed, and never an id)."""
    head, sep, rest = item.partition("=")
    if sep and PLAIN_NAME.fullmatch(head.strip()):
        return head.strip(), rest.strip()
    return None, item.strip()


def redact_endpoints(value: str) -> str:
    """A comma-separated list of endpoints (``id=address`` or addresses) as errors show it: each
    address as :func:`redact_address` shows it, ids as they are."""
    shown = []
    for item in str(value).split(","):
        pid, address = split_endpoint(item)
        shown.append(redact_address(address) if pid is None else f"{pid}={redact_address(address)}")
    return ",".join(shown)


__all__ = [
    "Address",
    "parse",
    "redact",
    "redact_address",
    "redact_endpoints",
    "split_endpoint",
    "PLAIN_NAME",
    "REDACTED",
    "SCHEMES",
]
