"""No token reaches a log line or an error message on the failure paths a user meets."""

from __future__ import annotations

import logging
import socket

import pytest

from rs_spark.net.protocol.address import parse, redact

SECRET = "s3cr3t-token-value-4711"


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket closes


@pytest.mark.parametrize("in_address", [True, False], ids=["token-in-address", "token-option"])
def test_the_sink_abort_warning_for_an_unreachable_hub_names_no_token(caplog, in_address):
    from rs_spark.spark.sink.options import SinkOptions
    from rs_spark.spark.sink.writer import ReactiveStreamWriter

    port = _closed_port()
    options = {"endpoint": f"tcp://127.0.0.1:{port}/sink" + (f"?token={SECRET}" if in_address else "")}
    if not in_address:
        options["token"] = SECRET
    writer = ReactiveStreamWriter(SinkOptions.parse(options))
    with caplog.at_level(logging.DEBUG):
        writer.abort([], 7)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "micro-batch 7 was aborted" in text  # the warning is there, naming the endpoint...
    assert f"127.0.0.1:{port}/sink" in text
    assert SECRET not in text  # ...but never its token


def test_address_errors_mask_the_token():
    with pytest.raises(ValueError) as err:
        parse(f"tcp://127.0.0.1:1/x?token={SECRET}&bogus=1")
    assert SECRET not in str(err.value) and "'tcp://127.0.0.1:1/x?***'" in str(err.value)  # no text after its '?'
    assert redact(f"tcp://h:1/x?codec=arrow&token={SECRET}") == "tcp://h:1/x?codec=arrow&token=***"


def test_a_token_sent_in_clear_text_beyond_loopback_is_warned_about_once_per_address(caplog):
    from rs_spark.net.protocol.dialling import warn_if_token_in_clear_text

    far = parse("tcp://feeds.example.internal:7000/x", need_name=False)
    with caplog.at_level(logging.WARNING):
        assert warn_if_token_in_clear_text(far, SECRET) is True
        assert warn_if_token_in_clear_text(far, SECRET) is False  # once per address
        assert warn_if_token_in_clear_text(parse("ws://10.1.2.3:80/x", need_name=False), SECRET) is True
        assert not warn_if_token_in_clear_text(parse("tcp://127.0.0.1:7000/x", need_name=False), SECRET)
        assert not warn_if_token_in_clear_text(parse("tls://feeds.example.internal:7000/x", need_name=False), SECRET)
        assert not warn_if_token_in_clear_text(parse("tcp://other.example:7000/x", need_name=False), None)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert text.count("without TLS") == 2 and "use tls://" in text and "use wss://" in text
    assert SECRET not in text


def _everything_said(caplog, exc):
    """Every log record (message and traceback) and the whole chain of the error: what a user sees."""
    parts = [
        r.getMessage() + (logging.Formatter().formatException(r.exc_info) if r.exc_info else "") for r in caplog.records
    ]
    while exc is not None:
        parts += [str(exc), repr(exc), str(getattr(exc, "args", ""))]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


def _failure(path, server, port):
    from rs_spark import net
    from rs_spark import streams as rs

    secret_address = {
        "connection refused": f"tcp://127.0.0.1:{port}/numbers?token={SECRET}",
        "wrong token": f"{server.address}?token={SECRET}",
        "unknown route": f"{server.address.rsplit('/', 1)[0]}/nope?token={SECRET}-right",
        "bad option": f"{server.address}?token={SECRET}&codec=pickle",
    }[path]
    try:
        pub = net.connect(secret_address)
        rs.to_list(pub, timeout=20)
        sub = net.connect_subscriber(secret_address)
        rs.from_iterable([1]).subscribe(sub)
        sub.wait(20)
    except Exception as exc:  # what the user's code catches
        return exc
    raise AssertionError(f"{path}: no error")


@pytest.mark.parametrize(
    "path,says",
    [
        ("connection refused", "could not connect"),
        ("wrong token", "wrong token"),
        ("unknown route", "no publisher named 'nope'"),
        ("bad option", "unknown codec 'pickle'"),
    ],
)
def test_no_failure_path_of_a_client_says_its_token(caplog, path, says):
    """The attacker's view is any log a user shares: run each failure with the token in the address
    and grep every record (tracebacks included) and the whole exception chain."""
    from rs_spark import net
    from rs_spark import streams as rs

    server = net.serve(rs.range_(5), name="numbers", token=SECRET + "-right")
    try:
        with caplog.at_level(logging.DEBUG):
            exc = _failure(path, server, _closed_port())
        said = _everything_said(caplog, exc)
        assert says in said, f"{path}: the failure should say what happened:\n{said}"
        assert SECRET not in said, f"{path}: the token leaked:\n{said}"
    finally:
        server.stop()
