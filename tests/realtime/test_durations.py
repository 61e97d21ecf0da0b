"""One duration grammar and one boolean grammar on both sides: Python's ``rs_spark.spark.durations``
and ``parse_bool`` and the shim's ``rsspark.rt.Durations`` and ``rsspark.rt.Booleans`` (called in a
real JVM through py4j) parse the same strings to the same values, and refuse the same strings with
the same message."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError

from rs_spark.spark.durations import MINIMUMS, duration_ms
from rs_spark.spark.options import OptionError, parse_bool
from rs_spark.spark.sink.options import SinkOptions
from rs_spark.spark.source.options import SourceOptions
from tests.jvm.conftest import standalone_jvm

ACCEPTED = [
    "500ms",
    "30s",
    "10min",
    "1h",
    "1.5s",
    "10 seconds",
    "1 second",
    "1 minute",
    "2 hours",
    "500 milliseconds",
    "1 day",
    "1 week",
    "interval 10 seconds",
    "1h 30min",
    "1h30min",
    "2 HOURS",
    " 30s ",
    "250000us",
    "1 hour 30 minutes 15 seconds",
]
REFUSED = [
    "600",
    "0",
    "1.5",
    "",
    "abc",
    "10 fortnights",
    "s",
    "10s x",
    "-1s",
    "1e3s",
    "10s,5s",
    "interval",
    "0s",
    "5ms",
    "999ms",
    "50 milliseconds",
    "10 micros",
]
NAMES = sorted(MINIMUMS) + ["anyDuration"]


@pytest.fixture(scope="module")
def jvm():
    yield from standalone_jvm()


@pytest.fixture(scope="module")
def durations(jvm):
    return jvm.rsspark.rt.Durations


def _python(name: str, value: str) -> tuple[str, float | str]:
    try:
        return "ms", duration_ms(name, value)
    except OptionError as exc:
        return "refused", str(exc)


def _java(durations, name: str, value: str) -> tuple[str, float | str]:
    try:
        return "ms", float(durations.millis(name, value))
    except Py4JJavaError as exc:
        assert exc.java_exception.getClass().getName() == "java.lang.IllegalArgumentException"
        return "refused", str(exc.java_exception.getMessage())


def test_python_and_the_jvm_parse_the_same_strings_to_the_same_result(durations):
    for name in NAMES:
        for value in ACCEPTED + REFUSED:
            assert _python(name, value) == _java(durations, name, value), (name, value)


def test_the_grammar_takes_short_units_and_spark_interval_words():
    assert [duration_ms("x", v) for v in ("500ms", "30s", "10min", "1h")] == [500, 30_000, 600_000, 3_600_000]
    assert [duration_ms("x", v) for v in ("500 milliseconds", "10 seconds", "1 minute", "2 hours")] == [
        500,
        10_000,
        60_000,
        7_200_000,
    ]
    assert duration_ms("x", "interval 1 hour 30 minutes") == 5_400_000
    assert all(_python("anyDuration", v)[0] == "ms" for v in ACCEPTED)
    assert all(_python("resumeWindow", v)[0] == "refused" for v in REFUSED)


def test_a_bare_number_is_refused_showing_how_to_write_it():
    with pytest.raises(OptionError, match=r"option resumeWindow='600': a duration needs a unit, e\.g\. '600s'"):
        SourceOptions.parse({"endpoint": "tcp://127.0.0.1:1/x", "resumeWindow": "600"})
    with pytest.raises(OptionError, match=r"option pollTimeout='500': a duration needs a unit"):
        SourceOptions.parse({"publisher": "m:f", "pollTimeout": 500})
    with pytest.raises(OptionError, match=r"option commitTimeout='30': a duration needs a unit"):
        SinkOptions.parse({"subscriber": "m:f", "commitTimeout": "30"})


def test_windows_and_timeouts_below_their_minimum_are_refused_with_the_reason():
    with pytest.raises(OptionError, match=r"resumeWindow='500ms' is below its minimum of 1s: .*zero-loss"):
        SourceOptions.parse({"endpoint": "tcp://127.0.0.1:1/x", "resumeWindow": "500ms"})
    with pytest.raises(OptionError, match=r"pollTimeout='1ms' is below its minimum of 10ms: .*busy loop"):
        SourceOptions.parse({"publisher": "m:f", "pollTimeout": "1ms"})
    with pytest.raises(OptionError, match=r"commitTimeout='0s' is below its minimum of 1s"):
        SinkOptions.parse({"subscriber": "m:f", "commitTimeout": "0s"})
    with pytest.raises(
        OptionError, match=r"keepSubscriberOnAbort='500ms' is below its minimum of 1s: .*true \(10min\)"
    ):
        SinkOptions.parse({"subscriber": "m:f", "keepSubscriberOnAbort": "500ms"})
    assert SinkOptions.parse({"subscriber": "m:f", "keepSubscriberOnAbort": "1s"}).keep_on_abort == 1.0
    for name, (least, _, _) in MINIMUMS.items():
        assert _python(name, f"{least}ms")[0] == "ms", name
        assert _python(name, f"{least / 2}ms")[0] == "refused", name


def test_the_source_options_are_durations_of_the_one_grammar():
    o = SourceOptions.parse(
        {"endpoint": "tcp://127.0.0.1:1/x", "resumeWindow": "10 minutes", "pollTimeout": "2 seconds"}
    )
    assert (o.resume_window, o.poll_timeout) == (600.0, 2.0)
    assert SinkOptions.parse({"subscriber": "m:f", "commitTimeout": "1 minute"}).commit_timeout == 60.0


def test_reactive_rt_uses_the_one_grammar(jvm):
    rt = jvm.rsspark.rt
    with pytest.raises(Py4JJavaError) as err:
        rt.RtOptions.parse(_map(jvm, {"endpoint": "tcp://127.0.0.1:1/x", "resumeWindow": "600"}))
    assert "format('reactive-rt'): option resumeWindow='600': a duration needs a unit, e.g. '600s'" in str(
        err.value.java_exception.getMessage()
    )
    with pytest.raises(Py4JJavaError) as err:
        rt.RtOptions.parse(_map(jvm, {"endpoint": "tcp://127.0.0.1:1/x", "connectTimeout": "10ms"}))
    assert "option connectTimeout='10ms' is below its minimum of 100ms" in str(err.value.java_exception.getMessage())
    rt.RtOptions.parse(_map(jvm, {"endpoint": "tcp://127.0.0.1:1/x", "resumeWindow": "10 minutes"}))


def _map(jvm, options: dict[str, str]):
    m = jvm.java.util.HashMap()
    for k, v in options.items():
        m.put(k, v)
    return m


# -- booleans: Spark's grammar (true / false in any case), on both sides -----------------------------

BOOLEANS = [
    "true",
    "false",
    "TRUE",
    "False",
    " true ",
    "yes",
    "no",
    "1",
    "0",
    "on",
    "off",
    "",
    "t",
    "truee",
    "true false",
]
EP = "tcp://127.0.0.1:1/x"


def _python_bool(value: str) -> tuple[str, bool | str]:
    try:
        return "value", parse_bool("resumable", value)
    except OptionError as exc:
        return "refused", str(exc)


def _java_bool(booleans, value: str) -> tuple[str, bool | str]:
    try:
        return "value", bool(booleans.parse("resumable", value))
    except Py4JJavaError as exc:
        assert exc.java_exception.getClass().getName() == "java.lang.IllegalArgumentException"
        return "refused", str(exc.java_exception.getMessage())


def test_python_and_the_jvm_read_the_same_booleans(jvm):
    for value in BOOLEANS:
        assert _python_bool(value) == _java_bool(jvm.rsspark.rt.Booleans, value), value
    accepted = {v for v in BOOLEANS if _python_bool(v)[0] == "value"}
    assert accepted == {"true", "false", "TRUE", "False", " true "}
    assert parse_bool("prefetch", True) is True and parse_bool("prefetch", False) is False
    assert _python_bool("yes") == ("refused", "option resumable='yes' is not a boolean: use true or false")


def test_the_boolean_options_of_both_sources_take_the_one_grammar(jvm):
    """The option parsers themselves: `reactive`'s resumable and prefetch, `reactive-rt`'s resumable and
    cancelOnStop, each given every string of the list."""
    for value in BOOLEANS:
        for name in ("resumable", "prefetch"):
            try:
                SourceOptions.parse({"endpoint": EP, name: value})
                python = "accepted"
            except OptionError as exc:
                python = str(exc)
            for rt_name in ("resumable", "cancelOnStop"):
                try:
                    jvm.rsspark.rt.RtOptions.parse(_map(jvm, {"endpoint": EP, rt_name: value}))
                    java = "accepted"
                except Py4JJavaError as exc:
                    java = str(exc.java_exception.getMessage())
                if python == "accepted":
                    assert java == "accepted", (name, rt_name, value)
                else:
                    assert java == "format('reactive-rt'): " + python.replace(name, rt_name), (name, rt_name, value)
