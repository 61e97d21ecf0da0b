"""One grammar for option ``endpoint`` on both sides: Python's ``parse_endpoints`` (the ``reactive``
source) and the shim's ``rsspark.rt.RtOptions.parseEndpoints`` (``reactive-rt``, called in a real JVM
through py4j) split the same lists into the same partition ids and addresses, and refuse the same
lists, showing a value that is no address the same way: only up to its first ``?`` or ``=``.

A partition id (before the first ``=``) is a plain name: letters, digits, ``_``, ``-``, ``.``, 1-64
of them; any other item is an address. So ``tcp//h:9/x?token=SECRET`` (its colon missing) is a
malformed address, never the id ``tcp//h:9/x?token`` of the address ``SECRET``."""

from __future__ import annotations

import re

import pytest
from py4j.protocol import Py4JJavaError

from rs_spark.spark.options import OptionError
from rs_spark.spark.source.options import parse_endpoints
from tests.jvm.conftest import standalone_jvm

SECRET = "s3cr3t-t0ken"

ACCEPTED = [
    "tcp://127.0.0.1:1/x",
    f"tcp://127.0.0.1:1/x?token={SECRET}",
    "eu=tcp://a:1/x,us=tcp://b:2/y",
    " eu = tcp://a:1/x , us=tcp://b:2/y ",
    "tcp://a:1/x,tcp://b:2/y",
    f"eu=tcp://a:1/x?token={SECRET},tcp://b:2/y",
    "a.b_C-9=unix:///tmp/s.sock/x,z=tls://h:3/y",
    "eu=tcp://a:1/x,,us=tcp://b:2/y,",
    "1=tcp://a:1/x,2=tcp://a:1/x",
    "a" * 64 + "=tcp://a:1/x,b=tcp://a:2/x",
]
REFUSED = [
    (f"tcp//127.0.0.1:9/x?token={SECRET}", "has no known scheme", "tcp//127.0.0.1:9/x?***"),
    (f"eu=tcp://a:1/x,tcp//127.0.0.1:9/x?token={SECRET}", "has no known scheme", "tcp//127.0.0.1:9/x?***"),
    (f"tcp//127.0.0.1:9/x?tokn={SECRET}", "has no known scheme", "tcp//127.0.0.1:9/x?***"),
    (f"http://h:1/x?token={SECRET}", "has no known scheme", "http://h:1/x?***"),
    (f"e u=tcp://a:1/x?token={SECRET}", "has no known scheme", "e u=***"),
    (f"eu/w=tcp://a:1/x?token={SECRET}", "has no known scheme", "eu/w=***"),
    (f"=tcp://a:1/x?token={SECRET}", "has no known scheme", "=***"),
    ("eu=nowhere", "has no known scheme", "nowhere"),
    ("a" * 65 + "=tcp://a:1/x", "must be 1-64 letters, digits", None),
    ("x=tcp://a:1/x,x=tcp://b:2/y", "names partition 'x' twice", None),
    ("tcp://a:1/x,tcp://b:2/x", "names partition 'x' twice", None),
    (f"eu=tcp://a:1/?token={SECRET}", "names no endpoint", "tcp://a:1/?token=***"),
    (f"eu=tcp://a:1/x?tokn={SECRET}", "has a query parameter other than token= and codec=", "tcp://a:1/x?***"),
    (f"eu=tcp://a/x?token={SECRET}", "port", "tcp://a/x?token=***"),
]


@pytest.fixture(scope="module")
def jvm():
    yield from standalone_jvm()


def _python(value: str) -> tuple[str, object]:
    try:
        return "partitions", list(parse_endpoints(value).items())
    except OptionError as exc:
        return "refused", str(exc)


def _java(jvm, value: str) -> tuple[str, object]:
    try:
        return "partitions", list(jvm.rsspark.rt.RtOptions.parseEndpoints(value, None).items())
    except Py4JJavaError as exc:
        assert exc.java_exception.getClass().getName() == "java.lang.IllegalArgumentException"
        return "refused", str(exc.java_exception.getMessage())


def _quoted(message: str) -> str:
    """What the message shows of the value: its first quoted part."""
    found = re.search(r"'([^']*)'", message)
    assert found, message
    return found.group(1)


def test_python_and_the_jvm_split_the_same_lists_into_the_same_partitions(jvm):
    for value in ACCEPTED:
        py, java = _python(value), _java(jvm, value)
        assert py[0] == "partitions", (value, py)
        assert py == java, value
    assert _python("eu=tcp://a:1/x,us=tcp://b:2/y")[1] == [("eu", "tcp://a:1/x"), ("us", "tcp://b:2/y")]
    assert _python("tcp://a:1/x,tcp://b:2/y")[1] == [("x", "tcp://a:1/x"), ("y", "tcp://b:2/y")]


@pytest.mark.parametrize("value,says,shown", REFUSED, ids=[r[1] + " " + r[0][:24] for r in REFUSED])
def test_python_and_the_jvm_refuse_the_same_lists_showing_the_value_the_same_way(jvm, value, says, shown):
    py, java = _python(value), _java(jvm, value)
    assert py[0] == java[0] == "refused", (py, java)
    for message in (py[1], java[1]):
        assert says in message, message
        assert SECRET not in message, message
        if shown is not None:
            assert _quoted(message.split("option endpoint", 1)[1]) == shown, message


def test_an_item_that_reads_as_no_address_says_what_an_id_is_made_of(jvm):
    for message in (_python("e u=tcp://a:1/x")[1], _java(jvm, "e u=tcp://a:1/x")[1]):
        assert (
            "(in id=address, an id is 1-64 letters, digits, '.', '_' or '-'; else the item is read as an address)"
            in (message)
        ), message
