"""The ``reactive`` source and sink over tls://: options tlsCaFile, tlsCertFile, tlsKeyFile and
tlsHostname (the names and meaning of the JVM's reactive-rt), their refusals, and one query that
reads a Python server over TLS on executors and writes into a hub served over TLS."""

from __future__ import annotations

import pickle
import secrets
import ssl

import pytest

import rs_spark
from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net import TlsFiles
from rs_spark.net.protocol.address import parse
from rs_spark.spark.options import OptionError
from rs_spark.spark.sink.options import SINK_OPTIONS, SinkOptions
from rs_spark.spark.source.options import SOURCE_OPTIONS, SourceOptions
from rs_spark.spark.source.resolve import make_publisher
from tests.certs import self_signed
from tests.subscribers import Recorder

TLS = ("tlsCaFile", "tlsCertFile", "tlsKeyFile", "tlsHostname")
SECRET = "s3cret-token-value"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return self_signed(tmp_path_factory.mktemp("tls"))


def test_the_source_and_the_sink_list_the_same_tls_options_as_the_jvm_formats():
    for table in (SOURCE_OPTIONS, SINK_OPTIONS):
        assert all(name in table for name in TLS)
        assert "default: the system's trust store" in table["tlsCaFile"]


def test_tls_options_parse_into_picklable_files_checked_at_start(certs):
    cert, key = certs
    o = SourceOptions.parse(
        {"endpoint": f"tls://127.0.0.1:1/feed?token={SECRET}", "TLSCAFILE": cert, "tlsHostname": "feed.example.com"}
    )
    assert o.tls == TlsFiles(ca_file=cert, hostname="feed.example.com")
    assert pickle.loads(pickle.dumps(o)).tls == o.tls and SECRET not in repr(o)
    s = SinkOptions.parse(
        {"endpoint": "tls://127.0.0.1:1/hub", "token": SECRET, "tlsCertFile": cert, "tlsKeyFile": key}
    )
    assert s.tls == TlsFiles(cert_file=cert, key_file=key) and SECRET not in repr(s)
    assert SourceOptions.parse({"endpoint": "tls://127.0.0.1:1/feed"}).tls is None


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_tls_options_with_an_endpoint_that_is_not_tls_are_refused_naming_the_option_and_the_endpoint(kind, certs):
    parse_options = SourceOptions.parse if kind == "source" else SinkOptions.parse
    with pytest.raises(OptionError) as info:
        parse_options({"endpoint": f"tcp://127.0.0.1:7878/feed?token={SECRET}", "tlsCaFile": certs[0]})
    text = str(info.value)
    assert "option tlsCaFile applies to tls:// endpoints, but the endpoint is tcp://127.0.0.1:7878/feed" in text
    assert SECRET not in text


def test_tls_options_without_an_endpoint_are_refused_naming_what_reads_instead(certs):
    with pytest.raises(OptionError, match="option publisher reads no endpoint"):
        SourceOptions.parse({"publisher": "tests.spark.publishers:numbers", "tlsCaFile": certs[0]})
    with pytest.raises(OptionError, match="option subscriber reads no endpoint"):
        SinkOptions.parse({"subscriber": "tests.spark.subscribers:collect", "tlsHostname": "x"})


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_a_bad_tls_file_fails_at_the_start_naming_the_option_and_the_file(kind, certs, tmp_path):
    parse_options = SourceOptions.parse if kind == "source" else SinkOptions.parse
    endpoint = f"tls://127.0.0.1:1/feed?token={SECRET}"
    with pytest.raises(OptionError, match=r"option tlsCaFile='.*nowhere\.pem' cannot be read") as info:
        parse_options({"endpoint": endpoint, "tlsCaFile": str(tmp_path / "nowhere.pem")})
    assert SECRET not in str(info.value)
    with pytest.raises(OptionError, match="option tlsKeyFile is the key of a client certificate"):
        parse_options({"endpoint": endpoint, "tlsKeyFile": certs[1]})
    with pytest.raises(OptionError, match=r"option tlsCertFile='.*' holds no PEM private key"):
        parse_options({"endpoint": endpoint, "tlsCertFile": certs[0]})


def test_every_partition_endpoint_must_be_tls_when_tls_options_are_given(certs):
    with pytest.raises(OptionError, match="option tlsCaFile applies to tls:// endpoints.*tcp://127.0.0.1:2/b"):
        SourceOptions.parse({"endpoint": "a=tls://127.0.0.1:1/a,b=tcp://127.0.0.1:2/b", "tlsCaFile": certs[0]})


@pytest.mark.timeout(120)
def test_the_reader_trusts_the_ca_file_and_checks_the_name_tls_hostname_gives(tmp_path):
    cert, key = self_signed(tmp_path, san="DNS:feed.example.com")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    server = net.serve(rs.range_(100), "numbers", token=SECRET, ssl=server_ctx)
    endpoint = parse(server.address).with_token(SECRET).format(with_token=True)
    try:
        for options, refused in (({}, "tlsCaFile"), ({"tlsCaFile": cert}, "tlsHostname")):
            with pytest.raises(net.NetError) as info:
                rs.to_list(make_publisher(SourceOptions.parse({"endpoint": endpoint, **options})), timeout=30)
            assert refused in str(info.value) and SECRET not in str(info.value)
        trusted = SourceOptions.parse({"endpoint": endpoint, "tlsCaFile": cert, "tlsHostname": "feed.example.com"})
        assert rs.to_list(make_publisher(trusted), timeout=30) == list(range(100))
    finally:
        server.stop()


@pytest.mark.timeout(300)
def test_a_query_reads_a_tls_endpoint_on_executors_and_writes_into_a_hub_served_over_tls(spark, certs, tmp_path):
    cert, key = certs
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    token = secrets.token_urlsafe(16)
    server = net.serve(rs.range_(2000).pipe(rs.map(lambda i: {"id": i})), "tlsrows", token=token, ssl=server_ctx)
    endpoint = parse(server.address).with_token(token).format(with_token=True)
    assert endpoint.startswith("tls://127.0.0.1:")
    rec = Recorder()
    try:
        df = (
            spark.readStream.format("reactive")
            .option("endpoint", endpoint)
            .option("executorFetch", "true")
            .option("tlsCaFile", cert)
            .option("maxRecordsPerTrigger", 800)
            .schema("id LONG")
            .load()
        )
        q = rs_spark.write_stream(
            df,
            rec,
            ssl=server_ctx,  # the hub in this process, served on tls:// with the same certificate
            options={"tlsCaFile": cert},
            checkpoint=str(tmp_path / "ck"),
            trigger={"availableNow": True},
        )
        assert q.awaitTermination(240), "the query did not end within 240 s"
        assert q.exception() is None
        assert rec.done.wait(30) and rec.completed and rec.error is None
    finally:
        server.stop()
    assert [r["id"] for r in rec.items] == list(range(2000))
    assert rs_spark.sink_state(q).options["tlsCaFile"] == cert
    progress = [p for p in q.recentProgress if p["numInputRows"]]
    assert len(progress) >= 3 and all(p["numInputRows"] <= 800 for p in progress)


@pytest.mark.timeout(300)
def test_read_stream_with_ssl_serves_the_publisher_over_tls(spark, certs, tmp_path):
    """rs_spark.read_stream(..., ssl=...) serves on tls:// (tlsCaFile is refused with a tcp:// endpoint,
    so rows arriving mean TLS); the hub here is plain."""
    cert, key = certs
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    rec = Recorder()
    df = rs_spark.read_stream(
        spark,
        rs.range_(500).pipe(rs.map(lambda i: {"id": i})),
        "id LONG",
        ssl=server_ctx,
        options={"tlsCaFile": cert, "maxRecordsPerTrigger": 200},
    )
    q = rs_spark.write_stream(df, rec, checkpoint=str(tmp_path / "ck"), trigger={"availableNow": True})
    assert q.awaitTermination(240), "the query did not end within 240 s"
    assert q.exception() is None
    assert rec.done.wait(30) and rec.completed and rec.error is None
    assert [r["id"] for r in rec.items] == list(range(500))
