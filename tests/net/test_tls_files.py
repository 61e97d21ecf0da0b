"""TlsFiles: the picklable TLS settings (CA file, client certificate, host name) a client rebuilds
its SSLContext from, against a real rs_spark.net server over tls:// on 127.0.0.1 with throwaway
certificates; and the refusals of files that cannot be used, naming the option and the file."""

from __future__ import annotations

import pickle
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net import TlsFiles
from rs_spark.net.protocol.address import parse
from rs_spark.net.protocol.tls_files import TLS_OPTIONS
from tests.certs import self_signed

pytestmark = pytest.mark.timeout(120)

TOKEN = "tls-files-test-token"
ROOT = Path(__file__).resolve().parents[2]


def _server(cert: str, key: str, client_ca: str | None = None) -> net.Server:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if client_ca is not None:  # the server asks for a client certificate and verifies it
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cafile=client_ca)
    s = net.Server("tls://127.0.0.1:0", token=TOKEN, ssl=ctx, limits=net.Limits(setup_timeout=2.0))
    s.add_publisher("numbers", rs.range_(300))
    return s


def _read(server: net.Server, tls: TlsFiles | None) -> list[int]:
    return rs.to_list(net.connect(server.address, token=TOKEN, tls=tls), timeout=30)


def _refusal(server: net.Server, tls: TlsFiles | None) -> str:
    with pytest.raises(net.NetError) as info:
        _read(server, tls)
    assert TOKEN not in str(info.value)
    return str(info.value)


def test_a_tls_endpoint_is_read_trusting_the_ca_file_and_a_pickled_publisher_keeps_the_files(tmp_path):
    cert, key = self_signed(tmp_path)
    server = _server(cert, key)
    try:
        assert _read(server, TlsFiles(ca_file=cert)) == list(range(300))
        # Spark pickles the publisher to executors: the files travel, each process builds its context.
        pub = pickle.loads(pickle.dumps(net.connect(server.address, token=TOKEN, tls=TlsFiles(ca_file=cert))))
        assert rs.to_list(pub, timeout=30) == list(range(300))
    finally:
        server.stop()


def test_without_the_ca_file_the_server_is_refused_saying_which_option_to_give(tmp_path):
    cert, key = self_signed(tmp_path)
    server = _server(cert, key)
    try:
        text = _refusal(server, None)
        assert "does not trust the certificate" in text and "tlsCaFile" in text
    finally:
        server.stop()


def test_a_certificate_for_another_name_is_refused_and_tls_hostname_names_the_one_it_lists(tmp_path):
    cert, key = self_signed(tmp_path, san="DNS:feed.example.com")
    server = _server(cert, key)
    try:
        text = _refusal(server, TlsFiles(ca_file=cert))
        assert "127.0.0.1" in text and "tlsHostname" in text
        assert _read(server, TlsFiles(ca_file=cert, hostname="feed.example.com")) == list(range(300))
        assert "tlsHostname" in _refusal(server, TlsFiles(ca_file=cert, hostname="other.example.com"))
    finally:
        server.stop()


def test_a_server_that_requires_a_client_certificate_takes_the_one_given(tmp_path):
    (tmp_path / "server").mkdir()
    (tmp_path / "client").mkdir()
    cert, key = self_signed(tmp_path / "server")
    client_cert, client_key = self_signed(tmp_path / "client", san="DNS:reader.example.com")
    server = _server(cert, key, client_ca=client_cert)
    try:
        with pytest.raises(net.NetError):  # no client certificate: the server closes the connection
            _read(server, TlsFiles(ca_file=cert))
        given = TlsFiles(ca_file=cert, cert_file=client_cert, key_file=client_key)
        assert _read(server, given) == list(range(300))
        both = tmp_path / "client" / "both.pem"  # the key inside the certificate's file
        both.write_text(Path(client_cert).read_text() + Path(client_key).read_text())
        assert _read(server, TlsFiles(ca_file=cert, cert_file=str(both))) == list(range(300))
    finally:
        server.stop()


def test_files_that_cannot_be_used_are_refused_naming_the_option_and_the_file(tmp_path):
    cert, key = self_signed(tmp_path)
    missing = str(tmp_path / "missing.pem")
    with pytest.raises(ValueError, match=r"option tlsCaFile='.*missing\.pem' cannot be read"):
        TlsFiles(ca_file=missing).context()
    with pytest.raises(ValueError, match=r"option tlsCaFile='.*key\.pem' holds no PEM certificate"):
        TlsFiles(ca_file=key).context()
    with pytest.raises(ValueError, match=r"option tlsCertFile='.*cert\.pem' holds no PEM private key.*tlsKeyFile"):
        TlsFiles(cert_file=cert).context()
    with pytest.raises(ValueError, match="option tlsKeyFile is the key of a client certificate: give option"):
        TlsFiles(key_file=key)
    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----\n")
    with pytest.raises(ValueError, match=r"option tlsCaFile='.*broken\.pem'"):
        TlsFiles(ca_file=str(broken)).context()


def test_a_key_in_another_format_than_pkcs8_is_refused_with_the_openssl_command_that_converts_it(tmp_path):
    cert, key = self_signed(tmp_path)
    traditional = tmp_path / "ec.pem"
    openssl = shutil.which("openssl")
    assert openssl is not None  # self_signed skipped the test without it
    subprocess.run(
        [openssl, "pkey", "-in", key, "-traditional", "-out", str(traditional)], check=True, capture_output=True
    )
    assert "BEGIN EC PRIVATE KEY" in traditional.read_text()
    with pytest.raises(ValueError) as info:
        TlsFiles(ca_file=cert, cert_file=cert, key_file=str(traditional)).context()
    text = str(info.value)
    assert "option tlsKeyFile=" in text and "'-----BEGIN EC PRIVATE KEY-----'" in text
    assert "openssl pkey -in KEY.pem -out KEY-pkcs8.pem" in text


def test_tls_options_are_refused_for_an_endpoint_that_is_not_tls():
    files = TlsFiles(ca_file="/etc/ssl/ca.pem")
    with pytest.raises(ValueError) as info:
        files.check_used_by(parse("tcp://127.0.0.1:7878/feed?token=s3cret"))
    assert "option tlsCaFile applies to tls:// endpoints" in str(info.value) and "tcp://127.0.0.1:7878/feed" in str(
        info.value
    )
    assert "s3cret" not in str(info.value)
    files.check_used_by(parse("tls://127.0.0.1:7878/feed"))
    assert TlsFiles.from_options({"tlshostname": " "}) is None
    assert TlsFiles.from_options({"tlshostname": "feed.example.com"}) == TlsFiles(hostname="feed.example.com")


def test_the_tls_options_have_the_names_of_the_jvm_clients_options():
    java = (ROOT / "jvm-shim/src/main/java/rsspark/rsocket/TlsSettings.java").read_text()
    for name in TLS_OPTIONS:
        assert f'= "{name}";' in java, f"{name} is not an option of the JVM client (TlsSettings.java)"
    assert java.count("public static final String ") >= len(TLS_OPTIONS)
