"""Real-time mode over tls:// end to end on local Spark: a Publisher served by rs_spark.net over TLS
-> format("reactive-rt") (the JVM client, the server verified against option tlsCaFile) -> the
shim's ForeachWriter -> a Subscriber served by the delivery hub over tls:// (realtime.write_stream's
ssl=, the sink's tlsCaFile). The client's refusals (wrong CA,
wrong host name, unix://) are JUnit tests against the same Python server
(jvm-shim/src/test/java/rsspark/rsocket/TlsAndUnixAgainstPythonServerTest.java)."""

from __future__ import annotations

import secrets
import ssl
from typing import Any

import pytest

from rs_spark import net
from rs_spark.net.protocol.address import parse
from rs_spark.net.zero_loss.retention import Retention
from rs_spark.spark import realtime
from tests.certs import self_signed
from tests.waits import wait_until

from .publishers import DDL, rows
from .subscribers import Collect


def _batch_id(q: Any) -> int:
    p = q.lastProgress
    return -1 if p is None else int(p["batchId"])


def test_a_tls_endpoint_is_read_with_the_server_verified_and_every_row_arrives_in_order(rt_spark, tmp_path):
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    token = secrets.token_urlsafe(16)
    server = net.serve(rows(), name="rt", token=token, ssl=context, retention=Retention(window=120))
    address = parse(server.address).with_token(token).with_codec("arrow").format(with_token=True)
    assert address.startswith("tls://127.0.0.1:")
    sub = Collect()
    try:
        df = realtime.read_stream(rt_spark, endpoint=address, schema=DDL, options={"tlsCaFile": cert})
        q = realtime.write_stream(  # into a hub served over tls:// too, trusted by the JVM sink's tlsCaFile
            df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"), ssl=context, options={"tlsCaFile": cert}
        )
        try:
            wait_until(lambda: _batch_id(q) >= 2 and len(sub.ids) >= 50, "three real-time batches and 50 rows", 90)
        finally:
            q.stop()
            wait_until(lambda: sub.completed.is_set() or sub.failed.is_set(), "the Subscriber's terminal signal")
    finally:
        server.stop()
    assert sub.completed.is_set(), sub.error
    assert sub.ids == list(range(len(sub.ids)))


def test_a_python_publisher_served_by_read_stream_with_ssl_is_read_over_tls(rt_spark, tmp_path):
    """read_stream(publisher=..., ssl=...) serves the publisher on tls:// (option tlsCaFile would be
    refused on a tcp:// endpoint, so rows arriving mean TLS); the sink here is plain."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    sub = Collect()
    df = realtime.read_stream(rt_spark, rows(), schema=DDL, ssl=context, options={"tlsCaFile": cert})
    q = realtime.write_stream(df, sub, trigger="1 second", checkpoint=str(tmp_path / "chk"))
    try:
        wait_until(lambda: len(sub.ids) >= 50, "50 rows over tls://", 90)
    finally:
        q.stop()
        wait_until(lambda: sub.completed.is_set() or sub.failed.is_set(), "the Subscriber's terminal signal")
    assert sub.completed.is_set(), sub.error
    assert sub.ids == list(range(len(sub.ids)))


def test_ssl_without_a_publisher_to_serve_is_refused_saying_what_to_do(rt_spark, tmp_path):
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with pytest.raises(ValueError, match=r"serves publisher= over tls://; an endpoint= is served by its own server"):
        realtime.read_stream(rt_spark, endpoint="tls://127.0.0.1:1/rt", schema=DDL, ssl=context)
