"""A planted token never comes out: every error path of the options, the endpoints and a running
query is walked, and the whole exception chain (str and repr, causes and contexts) and every log
record are searched for the token, raw and URL-encoded."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from urllib.parse import quote

import pytest

from rs_spark import net
from rs_spark import streams as rs
from rs_spark.net.protocol.address import parse, redact, redact_address, redact_endpoints
from rs_spark.spark.options import OptionError
from rs_spark.spark.sink.options import SinkOptions
from rs_spark.spark.source.options import SourceOptions
from rs_spark.spark.source.resolve import make_publisher

SECRET = "s3cr3t/tok+en=4711"
ENC = quote(SECRET, safe="")  # how the token is written inside an address
LEAKS = (SECRET, ENC, quote(ENC, safe=""), "%2A%2A%2A")  # raw, URL-encoded, twice; and *** encoded


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket closes


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [e.__cause__, e.__context__]
    return seen


def _everything_said(caplog, exc: BaseException | None) -> str:
    parts = [
        r.getMessage() + (logging.Formatter().formatException(r.exc_info) if r.exc_info else "") for r in caplog.records
    ]
    for e in _chain(exc):
        parts += [str(e), repr(e), repr(e.args)]
    return "\n".join(parts)


def _assert_no_token(said: str, path: str) -> None:
    for leak in LEAKS:
        assert leak not in said, f"{path}: {leak!r} came out:\n{said}"


def _raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except Exception as exc:  # what the user's code catches
        return exc
    raise AssertionError("no error")


def _read(options: dict) -> object:
    return rs.to_list(make_publisher(SourceOptions.parse(options)), timeout=20)


def _paths(port: int, served: str) -> dict[str, tuple[Callable[[], object], str]]:
    """Path name -> (what the user does, what the error must say)."""
    addr = f"tcp://127.0.0.1:{port}/numbers?token={ENC}"
    return {
        "publisher and endpoint together": (
            lambda: SourceOptions.parse({"publisher": "m:f", "endpoint": addr}),
            "needs exactly one of",
        ),
        "sink endpoint and subscriber together": (
            lambda: SinkOptions.parse({"endpoint": addr, "subscriber": "m:f"}),
            "needs exactly one of",
        ),
        "bad value": (lambda: SourceOptions.parse({"endpoint": addr, "maxRecordsPerTrigger": "many"}), "integer"),
        "bare duration": (lambda: SourceOptions.parse({"endpoint": addr, "resumeWindow": "600"}), "needs a unit"),
        "unknown option": (lambda: SourceOptions.parse({"endpoint": addr, "tokn": SECRET}), "unknown option 'tokn'"),
        "several endpoints, one malformed": (
            lambda: SourceOptions.parse({"endpoint": f"eu={addr},us=tcp://127.0.0.1/b?token={ENC}"}),
            "has no valid port",
        ),
        "several endpoints, one unnamed": (
            lambda: SourceOptions.parse({"endpoint": f"{addr},tcp://127.0.0.1:{port}?codec=arrow&token={ENC}"}),
            "names no endpoint",
        ),
        "several endpoints without executorFetch": (
            lambda: SourceOptions.parse({"endpoint": f"a={addr},b={addr}", "executorFetch": "false"}),
            "several endpoints are read by executors",
        ),
        "several endpoints in a batch read": (
            lambda: make_publisher(SourceOptions.parse({"endpoint": f"a={addr},b={addr}"})),
            "spark.read reads one",
        ),
        "refused connection, token in the address": (lambda: _read({"endpoint": addr}), "could not connect"),
        "refused connection, token option": (
            lambda: _read({"endpoint": addr.split("?")[0], "token": SECRET}),
            "could not connect",
        ),
        "wrong token": (lambda: _read({"endpoint": f"{served}?token={ENC}", "resumable": "false"}), "wrong token"),
        "wrong token, resumable": (lambda: _read({"endpoint": f"{served}?token={ENC}"}), "wrong token"),
        "address parse": (lambda: parse(f"http://127.0.0.1:{port}/x?token={ENC}"), "no known scheme"),
        **{
            f"{who}, {case}": (_malformed(who, value(port)), "no known scheme")
            for who in WHO
            for case, value in MALFORMED
        },
        **{
            f"{who}, token misspelt in an address": (
                _malformed(who, f"tcp://127.0.0.1:{port}/x?tokn={ENC}"),
                "has a query parameter other than token= and codec=",
            )
            for who in WHO
        },
    }


MALFORMED = [  # endpoint values that are no address (each holds the token): shown only up to the first '?' or '='
    ("colon missing", lambda port: f"tcp//127.0.0.1:{port}/x?token={ENC}"),
    (
        "colon missing, second in a list",
        lambda port: f"eu=tcp://127.0.0.1:{port}/x,tcp//127.0.0.1:{port}/y?token={ENC}",
    ),
    ("colon missing, token misspelt", lambda port: f"tcp//127.0.0.1:{port}/x?tokn={ENC}"),
    ("id not a plain name", lambda port: f"e u=tcp://127.0.0.1:{port}/x?token={ENC}"),
    ("unknown scheme", lambda port: f"rsocket://127.0.0.1:{port}/x?token={ENC}"),
]
WHO = ("source", "sink", "rs_spark.net")


def _malformed(who: str, value: str) -> Callable[[], object]:
    if who == "source":
        return lambda: SourceOptions.parse({"endpoint": value})
    if who == "sink":
        return lambda: SinkOptions.parse({"endpoint": value})
    return lambda: net.connect(value)


PATHS = list(_paths(1, "tcp://127.0.0.1:1/numbers"))


@pytest.mark.parametrize("path", PATHS)
def test_no_error_path_says_the_token(caplog, path):
    server = net.serve(rs.range_(5), name="numbers", token="the-right-token")
    try:
        action, says = _paths(_closed_port(), server.address)[path]
        with caplog.at_level(logging.DEBUG):
            exc = _raised(action)
        said = _everything_said(caplog, exc)
        assert says in said, f"{path}: the error should say what happened:\n{said}"
        _assert_no_token(said, path)
    finally:
        server.stop()


def test_option_errors_redact_whatever_they_quote():
    err = OptionError(f"got endpoint='tcp://h:1/x?token={ENC}', options {{'token': '{SECRET}'}}")
    _assert_no_token(str(err) + repr(err), "OptionError")
    assert "token=***" in str(err) and "'token': '***'" in str(err)


def test_the_reprs_of_options_and_addresses_show_no_token():
    addr = f"tcp://127.0.0.1:1/x?token={ENC}"
    shown = [
        repr(SourceOptions.parse({"endpoint": f"a={addr},b={addr}", "token": SECRET})),
        repr(SinkOptions.parse({"endpoint": addr, "token": SECRET})),
        repr(parse(addr)),
    ]
    _assert_no_token("\n".join(shown), "repr")
    assert "token='***'" in shown[0] and "token=***" in shown[0]


REDACTED = {
    f"tcp://h:1/x?token={ENC}": "tcp://h:1/x?token=***",
    f"tcp://h:1/x?codec=arrow&token={ENC}": "tcp://h:1/x?codec=arrow&token=***",
    f"tcp://h:1/x?token={ENC}&codec=arrow": "tcp://h:1/x?token=***&codec=arrow",
    f"eu=tcp://a:1/x?token={ENC},us=tcp://b:2/y?codec=arrow&token={ENC},tcp://c:3/z": (
        "eu=tcp://a:1/x?token=***,us=tcp://b:2/y?codec=arrow&token=***,tcp://c:3/z"
    ),
    quote(f"tcp://h:1/x?token={ENC}&codec=arrow", safe=""): "tcp%3A%2F%2Fh%3A1%2Fx%3Ftoken%3D***%26codec%3Darrow",
    f"tcp://h:1/x?TOKEN={ENC}": "tcp://h:1/x?TOKEN=***",
    "tcp://h:1/x?codec=arrow": "tcp://h:1/x?codec=arrow",
    "": "",
}


def test_redact_keeps_every_endpoint_of_a_list_and_handles_url_encoded_forms():
    for given, shown in REDACTED.items():
        assert redact(given) == shown, given


@pytest.fixture(scope="module")
def jvm():
    from tests.jvm.conftest import standalone_jvm

    yield from standalone_jvm()


def test_the_jvm_redacts_as_python_does(jvm):
    for given, shown in REDACTED.items():
        assert jvm.rsspark.rsocket.Endpoint.redact(given) == shown, given


def test_the_real_time_source_refuses_malformed_endpoints_without_the_token(jvm):
    from py4j.protocol import Py4JJavaError

    for case, value in MALFORMED:
        options = jvm.java.util.HashMap()
        options.put("endpoint", value(1))
        try:
            jvm.rsspark.rt.RtOptions.parse(options)
        except Py4JJavaError as exc:
            said = str(exc.java_exception.getMessage())
        else:
            raise AssertionError(f"{case}: accepted")
        assert "has no known scheme" in said, f"{case}: {said}"
        _assert_no_token(said, f"reactive-rt, {case}")


def test_a_value_that_is_no_address_shows_nothing_after_its_first_question_mark_or_equals():
    shown = {
        f"tcp//h:1/x?token={ENC}": "tcp//h:1/x?***",
        f"tcp//h:1/x?tokn={ENC}": "tcp//h:1/x?***",
        f"e u=tcp://h:1/x?token={ENC}": "e u=***",
        quote(f"tcp//h:1/x?tokn={ENC}", safe=""): "tcp%2F%2Fh%3A1%2Fx%3F***",
        f"tcp://h:1/x?codec=arrow&token={ENC}": "tcp://h:1/x?codec=arrow&token=***",
        "SECRET": "SECRET",  # a bare word: nothing marks a token in it
    }
    for given, expected in shown.items():
        assert redact_address(given) == expected, given
    assert redact_endpoints(f"eu=tcp://h:1/x?token={ENC},tcp//h:2/y?tokn={ENC}") == (
        "eu=tcp://h:1/x?token=***,tcp//h:2/y?***"
    )


def test_a_query_failing_on_a_wrong_token_says_no_token_into_spark(spark, caplog, tmp_path):
    """The message Spark raises (StreamingQueryException, from the reader process) and the logs."""
    server = net.serve(rs.range_(5), name="numbers", token="the-right-token")
    try:
        # py4j's own DEBUG records are the wire protocol, the user's option values included: INFO and up
        # from every logger, DEBUG from rs_spark's
        with caplog.at_level(logging.INFO), caplog.at_level(logging.DEBUG, logger="rs_spark"):
            reader = spark.readStream.format("reactive").schema("value LONG")
            df = reader.option("endpoint", f"{server.address}?token={ENC}").load()
            q = df.writeStream.format("memory").queryName("redaction_wrong_token").start()
            try:
                exc = _raised(lambda: q.awaitTermination(120))
            finally:
                q.stop()
        said = _everything_said(caplog, exc) + "\n" + str(q.exception() or "")
        assert "wrong token" in said, said
        _assert_no_token(said, "query")
    finally:
        server.stop()
