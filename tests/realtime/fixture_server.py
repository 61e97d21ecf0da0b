"""A Python rs_spark.net server for the JVM shim's JUnit suite (jvm-shim/src/test): the Java client
is tested against the real Python server, in its own process.

    python -m tests.realtime.fixture_server rows 100        # rows 0..99, then complete
    python -m tests.realtime.fixture_server endless
    python -m tests.realtime.fixture_server failing 5 "boom"
    python -m tests.realtime.fixture_server sink            # a delivery hub (rs_spark.serve_sink)

Before the kind, ``--bind ADDRESS`` serves there (e.g. ``unix:///tmp/x.sock``), ``--tls CERT KEY``
serves TLS with that certificate (not the sink), and ``--client-ca CA`` (with ``--tls``) asks every client for a
certificate signed by CA.

It prints ``ADDRESS <address with token>``, then one line per event (``REQUESTED <total>``,
``EMITTED <total>``, ``COMMITTED <position>``, ``CANCELLED``, ``ROW <id>``, ``COMPLETE``,
``ERROR <text>``), and exits when its stdin closes (the JUnit test ended or died).
"""

from __future__ import annotations

import secrets
import ssl
import sys
import threading
from typing import Any

from rs_spark import net
from rs_spark.delivery import serve_sink
from rs_spark.net.protocol.address import parse
from rs_spark.net.zero_loss.retention import Retention

from .publishers import Recording, rows

_out = threading.Lock()


def say(line: str) -> None:
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class _Announcing(Recording):
    """A Recording publisher that prints what it sees."""

    def on_request(self, n: int) -> None:
        super().on_request(n)
        say(f"REQUESTED {self.requested}")

    def on_emit(self, rows: int) -> None:
        super().on_emit(rows)
        say(f"EMITTED {self.emitted}")

    def on_commit(self, position: int) -> None:
        say(f"COMMITTED {position}")


def _publisher(kind: str, args: list[str]) -> Any:
    if kind == "rows":
        rec = rows(count=int(args[0]), recording=_Announcing)
    elif kind == "endless":
        rec = rows(recording=_Announcing)
    elif kind == "failing":
        rec = rows(fail_after=int(args[0]), message=args[1] if len(args) > 1 else "boom", recording=_Announcing)
    else:
        raise SystemExit(f"unknown fixture {kind!r}: rows N | endless | failing N MESSAGE | sink")
    threading.Thread(target=lambda: (rec.cancelled.wait(), say("CANCELLED")), daemon=True).start()
    return rec


class _PrintingSubscriber:
    def on_subscribe(self, s: Any) -> None:
        s.request(2**63 - 1)

    def on_next(self, row: Any) -> None:
        say(f"ROW {row['id']}")

    def on_error(self, e: BaseException) -> None:
        say(f"ERROR {e}")

    def on_complete(self) -> None:
        say("COMPLETE")


def _flags(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``--bind``, ``--tls`` and ``--client-ca`` as net.serve keyword arguments, and the rest of argv."""
    kw: dict[str, Any] = {}
    client_ca = None
    while argv and argv[0].startswith("--"):
        flag, argv = argv[0], argv[1:]
        if flag == "--bind":
            kw["bind"], argv = argv[0], argv[1:]
        elif flag == "--tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(argv[0], argv[1])
            kw["ssl"], argv = ctx, argv[2:]
        elif flag == "--client-ca":
            client_ca, argv = argv[0], argv[1:]
        else:
            raise SystemExit(f"unknown flag {flag!r}: --bind ADDRESS | --tls CERT KEY | --client-ca CA")
    if client_ca is not None:
        kw["ssl"].verify_mode = ssl.CERT_REQUIRED
        kw["ssl"].load_verify_locations(client_ca)
    return kw, argv


def main(argv: list[str]) -> None:
    kw, argv = _flags(argv)
    kind, args = argv[0], argv[1:]
    token = secrets.token_urlsafe(16)
    if kind == "sink":
        if "ssl" in kw:
            raise SystemExit("the sink fixture serves no TLS: serve_sink takes no ssl context")
        ep = serve_sink(_PrintingSubscriber(), token=token, **kw)
        say(f"ADDRESS {ep.address}")
        stop = ep.stop
    else:
        server = net.serve(_publisher(kind, args), name="fixture", token=token, retention=Retention(window=60), **kw)
        say(f"ADDRESS {parse(server.address).with_token(token).with_codec('arrow').format(with_token=True)}")
        stop = server.stop
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    stop()


if __name__ == "__main__":
    main(sys.argv[1:])
