"""Option parsing shared by the ``reactive`` source and sink: case-insensitive and strict.

Spark hands a data source a case-insensitive dict whose keys are stored lower-cased, so
``dict(options).get("maxRecordsPerTrigger")`` silently misses. Everything here looks keys up
case-insensitively, and an unknown key is an error that names the closest known option.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from ..net.protocol.address import parse, redact
from ..net.protocol.tls_files import TLS_OPTIONS, TlsFiles

PASS_THROUGH_PREFIX = "publisher."
"""Options starting with this prefix are not checked: they are for the user's factory."""


class OptionError(ValueError):
    """An option is unknown, missing or has a value that cannot be used. Its message goes through
    :func:`rs_spark.net.protocol.address.redact`: an address it quotes shows no token."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def redacted_repr(options: Any) -> str:
    """``Name(field=value, ...)`` of a dataclass of parsed options, any token (and any address holding
    one) redacted: what the source's and the sink's options show in logs and errors."""
    fields = ", ".join(f"{f.name}={getattr(options, f.name)!r}" for f in dataclasses.fields(options))
    return redact(f"{type(options).__name__}({fields})")


def parse_int(name: str, value: Any, minimum: int) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise OptionError(f"option {name}={value!r} is not an integer") from None
    if n < minimum:
        raise OptionError(f"option {name}={n} must be >= {minimum}")
    return n


def parse_bool(name: str, value: Any) -> bool:
    """Option ``name``'s ``value``: ``true`` or ``false`` in any case (a Python bool too), as Spark reads
    its own boolean options; nothing else (``yes``, ``1``). The JVM's ``rsspark.rt.Booleans`` is the same."""
    v = str(value).strip().lower()
    if v == "true":
        return True
    if v == "false":
        return False
    raise OptionError(f"option {name}='{value}' is not a boolean: use true or false")


def parse_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    v = str(value).strip().lower()
    if v not in choices:
        raise OptionError(f"option {name}={value!r} must be one of {', '.join(choices)}")
    return v


def lookup(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return a plain dict keyed by lower-cased option names (works for Spark's dict and ours)."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def factory_options(options: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """What the user's factory gets: the options under ``prefix`` (``publisher.`` or
    ``subscriber.``, in any case) with the prefix stripped and the rest of the key as rs_spark
    received it. Nothing else: not the token, not rs_spark's own options. (Spark lower-cases
    option keys before a Python data source sees them, so through Spark the keys are lower-case.)"""
    n = len(prefix)
    return {str(k)[n:]: v for k, v in dict(options).items() if str(k).lower().startswith(prefix) and len(str(k)) > n}


OptionValue = str | int | float | bool
"""A Spark option's value as the Python helpers take it (sent as its ``str``; booleans as true/false)."""


def check_known(
    options: Mapping[str, Any],
    known: Mapping[str, str],
    where: str,
    prefix: str = PASS_THROUGH_PREFIX,
    factory: str = "publisher",
) -> None:
    """Raise :class:`OptionError` for a key not in ``known`` (by lower-cased name); keys starting
    with ``prefix`` are for the user's ``factory`` and pass unchecked."""
    lowered = {k.lower(): k for k in known}
    for key in options:
        k = str(key).lower()
        if k in lowered or k.startswith(prefix):
            continue
        close = difflib.get_close_matches(k, list(lowered), n=1)
        hint = f" Did you mean '{lowered[close[0]]}'?" if close else ""
        raise OptionError(
            f"unknown option '{key}' for {where}.{hint} Known options: {', '.join(sorted(known))}. "
            f"Options for your {factory} factory go under the '{prefix}' prefix."
        )


def parse_tls(o: Mapping[str, Any], endpoints: Iterable[str], without_endpoint: str | None) -> TlsFiles | None:
    """Options tlsCaFile, tlsCertFile, tlsKeyFile, tlsHostname (``o``: keys lower-cased) for
    ``endpoints``: refused for an endpoint that is not tls:// (or when option ``without_endpoint``
    reads none); the files are read and checked now, so a bad one fails the query at its start."""
    try:
        tls = TlsFiles.from_options(o)
        if tls is None:
            return None
        if without_endpoint is not None:
            raise OptionError(
                f"the TLS options ({', '.join(TLS_OPTIONS)}) apply to a tls:// endpoint; option "
                f"{without_endpoint} reads no endpoint: drop them, or give option endpoint"
            )
        used = False
        for address in endpoints:
            a = parse(address, need_name=False)
            tls.check_used_by(a)
            used = True
        if used:
            tls.context()  # read and check the files here, where the query starts
    except OptionError:
        raise
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    return tls


__all__ = [
    "parse_tls",
    "OptionError",
    "parse_int",
    "parse_bool",
    "parse_choice",
    "check_known",
    "lookup",
    "factory_options",
    "redacted_repr",
    "OptionValue",
    "PASS_THROUGH_PREFIX",
]
