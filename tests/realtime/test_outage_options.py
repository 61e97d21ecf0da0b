"""The outage options mean the same in the Python ``reactive`` source and sink and in the JVM's
``reactive-rt`` source and real-time sink: the same names, defaults, values and refusals (parsed on
both sides, the JVM's in the real-time tests' Spark driver, through py4j)."""

from __future__ import annotations

import pytest
from py4j.java_gateway import get_field

from rs_spark.spark.options import OptionError
from rs_spark.spark.sink.options import SINK_OPTIONS, SinkOptions
from rs_spark.spark.source.options import SOURCE_OPTIONS, SourceOptions

LINK = ("keepaliveInterval", "keepaliveTimeout", "reconnectBackoff", "reconnectBackoffMax")
ENDPOINT = "tcp://127.0.0.1:1/x"
STRUCT = '{"type":"struct","fields":[]}'


@pytest.fixture(scope="module")
def jvm(rt_spark):
    from rs_spark.spark.jvm import jvm as spark_jvm

    return spark_jvm(rt_spark)


def _refusal(call) -> str:
    """What the JVM's IllegalArgumentException said (pyspark hands it on converted)."""
    with pytest.raises(Exception) as err:  # noqa: PT011 - Py4JJavaError or pyspark's converted IllegalArgumentException
        call()
    java = getattr(err.value, "java_exception", None)
    return str(java.getMessage()) if java is not None else str(err.value)


def _map(jvm, options: dict[str, str]):
    m = jvm.java.util.HashMap()
    for k, v in options.items():
        m.put(k, v)
    return m


def _python(options: dict[str, str]) -> tuple[float, float, float, float]:
    link = SourceOptions.parse({"endpoint": ENDPOINT, **options}).link
    return link.keepalive, link.lifetime, link.backoff_first, link.backoff_max


def _java(jvm, options: dict[str, str]) -> tuple[float, float, float, float]:
    s = jvm.rsspark.rt.RtOptions.parse(_map(jvm, {"endpoint": ENDPOINT, **options})).readerSettings()
    c = get_field(s, "connection")
    ms = [
        get_field(c, "keepaliveMs"),
        get_field(c, "lifetimeMs"),
        get_field(s, "backoffFirstMs"),
        get_field(s, "backoffMaxMs"),
    ]
    return tuple(x / 1000 for x in ms)  # type: ignore[return-value]


def test_both_sides_name_the_outage_options_alike():
    assert set(LINK) <= set(SOURCE_OPTIONS) and set(LINK) | {"reconnectTimeout"} <= set(SINK_OPTIONS)


@pytest.mark.parametrize(
    "options",
    [
        {},  # the defaults: 2s, 10s, 100ms, 10s
        {
            "keepaliveInterval": "200ms",
            "keepaliveTimeout": "1s",
            "reconnectBackoff": "50ms",
            "reconnectBackoffMax": "500ms",
        },
        {"keepaliveTimeout": "1 minute", "reconnectBackoffMax": "30 seconds"},
    ],
)
def test_the_source_options_parse_to_the_same_values_in_python_and_the_jvm(jvm, options):
    assert _python(options) == _java(jvm, options)


REFUSED = [
    (
        {"keepaliveInterval": "5s", "keepaliveTimeout": "5s"},
        "keepaliveTimeout",
        "must be longer than keepaliveInterval",
    ),
    ({"reconnectBackoff": "20s"}, "reconnectBackoff", "is longer than reconnectBackoffMax"),
    ({"keepaliveTimeout": "500ms"}, "keepaliveTimeout", "below its minimum of 1s"),
    ({"reconnectBackoff": "5ms"}, "reconnectBackoff", "below its minimum of 10ms"),
]


@pytest.mark.parametrize("options, name, why", REFUSED)
def test_both_sides_refuse_the_same_values_saying_the_same(jvm, options, name, why):
    with pytest.raises(OptionError, match=f"option {name}=.*{why}"):
        SourceOptions.parse({"endpoint": ENDPOINT, **options})
    with pytest.raises(OptionError, match=f"option {name}=.*{why}"):
        SinkOptions.parse({"endpoint": ENDPOINT, **options})
    source = lambda: jvm.rsspark.rt.RtOptions.parse(_map(jvm, {"endpoint": ENDPOINT, **options}))  # noqa: E731
    sink = lambda: jvm.rsspark.rt.ReactiveSinkWriter.create(ENDPOINT, STRUCT, _map(jvm, options))  # noqa: E731
    for parse in (source, sink):
        text = _refusal(parse)
        assert f"option {name}=" in text and why in text, text


def test_the_sinks_reconnect_timeout_has_the_same_default_and_minimum_on_both_sides(jvm):
    assert SinkOptions.parse({"endpoint": ENDPOINT}).reconnect_timeout == 600.0
    with pytest.raises(OptionError, match="option reconnectTimeout='500ms' is below its minimum of 1s"):
        SinkOptions.parse({"endpoint": ENDPOINT, "reconnectTimeout": "500ms"})
    text = _refusal(
        lambda: jvm.rsspark.rt.ReactiveSinkWriter.create(ENDPOINT, STRUCT, _map(jvm, {"reconnectTimeout": "500ms"}))
    )
    assert "option reconnectTimeout='500ms' is below its minimum of 1s" in text, text
