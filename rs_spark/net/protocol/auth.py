"""Token checks for SETUP (RSocket authentication extension, ``bearer`` or ``simple``)."""

from __future__ import annotations

import hmac

from . import frames as F
from .errors import Rejected
from .metadata import AUTHENTICATION, COMPOSITE, MetadataError, bearer, composite, token_of


def setup_metadata(token: str | None, entries: list[tuple[str, bytes]] | None = None) -> bytes | None:
    """Composite SETUP metadata carrying ``token`` as a bearer credential and ``entries``
    (None when there is nothing to carry)."""
    all_entries = ([(AUTHENTICATION, bearer(token))] if token else []) + list(entries or [])
    if not all_entries:
        return None
    return composite(all_entries)


def check_token(
    expected: str | None, metadata_mime: str, metadata: bytes | bytearray | memoryview | None, where: str
) -> None:
    """Raise :class:`Rejected` (REJECTED_SETUP) unless the SETUP carries ``expected``."""
    if expected is None:
        return
    try:
        got = token_of(metadata_mime, bytes(metadata) if metadata is not None else None)
    except MetadataError as exc:
        raise Rejected(F.INVALID_SETUP, f"{where}: unreadable SETUP metadata: {exc}") from None
    if got is None:
        raise Rejected(
            F.REJECTED_SETUP,
            (
                f"{where} requires a token and the SETUP frame carried none; pass token=... to connect() "
                f"(or '?token=...' in the address). Generic RSocket clients: send SETUP metadata of type "
                f"{COMPOSITE} with a {AUTHENTICATION} entry (bearer token, or simple auth with the token as password)"
            ),
        )
    if not hmac.compare_digest(got, expected.encode("utf-8")):
        raise Rejected(F.REJECTED_SETUP, f"{where}: wrong token; use the token the server was started with")


__all__ = ["setup_metadata", "check_token"]
