"""A JVM Publisher named by text and built in this process's own standalone JVM
(rs_spark.jvm.open_publisher: what the reader's jvmPublisher option uses), and its errors."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from rs_spark.jvm import JvmFactoryError, open_publisher
from rs_spark.streams.subscribers import BlockingIterator

from .conftest import FIXTURES, build


@pytest.fixture(scope="module", autouse=True)
def _jars():
    from rs_spark.jvm import close_shared

    build()
    yield
    close_shared()  # the per-process JVMs this module started end with it, not with pytest


def _values(pub):
    it = BlockingIterator(prefetch=4)
    pub.subscribe(it)
    return pa.Table.from_batches(list(it)).column(0).to_pylist()


def test_a_static_factory_with_the_options_map_builds_a_submission_publisher():
    pub = open_publisher("rsspark.fixtures.Feeds#longs", [FIXTURES], {"count": "5000", "start": "7"})
    assert _values(pub) == list(range(7, 5007))


def test_a_no_argument_factory_and_a_publisher_class_with_a_map_constructor():
    assert _values(open_publisher("rsspark.fixtures.Feeds#ten", FIXTURES)) == list(range(10))
    assert _values(open_publisher("rsspark.fixtures.Feeds$Countdown", FIXTURES, {"from": "3"})) == [0, 1, 2]


def test_the_jvm_is_shared_per_process_and_set_of_jars():
    from rs_spark.jvm import shared

    open_publisher("rsspark.fixtures.Feeds#ten", [FIXTURES])
    g = shared([FIXTURES])
    assert g is shared([FIXTURES]) and g is not shared([])
    open_publisher("rsspark.fixtures.Feeds#ten", FIXTURES)  # the same jars as text: the same JVM
    assert shared([FIXTURES]) is g


def test_close_shared_ends_the_shared_jvms_and_the_next_use_starts_a_new_one():
    from rs_spark.jvm import close_shared, shared

    g = shared([FIXTURES])
    close_shared()
    assert g.gateway_process_exited()
    h = shared([FIXTURES])
    assert h is not g and _values(open_publisher("rsspark.fixtures.Feeds#ten", [FIXTURES])) == list(range(10))


def test_gateway_pid_is_the_process_id_of_the_jvm_it_started():
    from rs_spark.jvm import Gateway, shared

    g = shared([FIXTURES])
    assert g.pid is not None
    with open(f"/proc/{g.pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    assert os.path.basename(argv[0]) == b"java" and b"py4j.GatewayServer" in argv
    assert Gateway(g.gateway, None).pid is None  # a JVM it did not start (e.g. Spark's)


@pytest.mark.parametrize(
    "spec, jars, words",
    [
        (
            "com.nope.Missing#feed",
            [FIXTURES],
            [
                "option jvmPublisher='com.nope.Missing#feed'",
                "class com.nope.Missing is not on the JVM's classpath",
                "option jvmJars",
                "rs-spark-jvm-fixtures.jar",
            ],
        ),
        (
            "rsspark.fixtures.Feeds#nope",
            [FIXTURES],
            [
                "option jvmPublisher='rsspark.fixtures.Feeds#nope'",
                "has no public static method nope() or nope(Map<String, String>)",
                "longs(Map)",
                "Name a public static method",
            ],
        ),
        (
            "rsspark.fixtures.Feeds#notAPublisher",
            [FIXTURES],
            ["returned java.lang.String", "neither a java.util.concurrent.Flow.Publisher", "Make the factory return"],
        ),
        (
            "rsspark.fixtures.Feeds",
            [FIXTURES],
            ["class rsspark.fixtures.Feeds is not a Publisher", "rsspark.fixtures.Feeds#method"],
        ),
        (
            "rsspark.fixtures.Feeds#broken",
            [FIXTURES],
            ["threw java.lang.IllegalStateException: no feed configured", "Fix the factory"],
        ),
    ],
)
def test_errors_name_the_option_the_value_and_what_to_do(spec, jars, words):
    with pytest.raises(JvmFactoryError) as info:
        open_publisher(spec, jars)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_a_class_outside_the_given_jars_says_none_were_given():
    with pytest.raises(JvmFactoryError, match=r"not on the JVM's classpath.*jvmJars.*\(none given\)"):
        open_publisher("rsspark.fixtures.Feeds#ten")  # the fixtures jar is not on this JVM's classpath


def test_a_missing_jar_is_named_before_any_jvm_starts(tmp_path):
    with pytest.raises(JvmFactoryError, match=r"option jvmJars: jar '/nope/feeds.jar' does not exist"):
        open_publisher("com.example.Feeds#x", "/nope/feeds.jar")
    with pytest.raises(JvmFactoryError, match=r"option jvmJars: .*matches no file"):
        open_publisher("com.example.Feeds#x", f"{FIXTURES},{tmp_path}/*.jar")


def test_source_options_accept_exactly_one_publisher_kind():
    from rs_spark.spark.options import OptionError
    from rs_spark.spark.source.options import SourceOptions

    o = SourceOptions.parse({"jvmPublisher": "rsspark.fixtures.Feeds#longs", "jvmJars": FIXTURES})
    assert o.jvm_publisher == "rsspark.fixtures.Feeds#longs" and o.jvm_jars == FIXTURES and o.publisher is None
    with pytest.raises(OptionError, match="exactly one of option 'publisher'.*'jvmPublisher'"):
        SourceOptions.parse({"jvmPublisher": "a.B#c", "publisher": "m:f"})
    with pytest.raises(OptionError, match="jvmJars=.*only used with option jvmPublisher"):
        SourceOptions.parse({"publisher": "m:f", "jvmJars": FIXTURES})
    with pytest.raises(OptionError, match="must look like 'com.example.Feeds#method'.*option publisher"):
        SourceOptions.parse({"jvmPublisher": "my.module:factory"})


def test_a_factory_that_threw_keeps_its_java_stack_trace_as_the_cause():
    with pytest.raises(JvmFactoryError) as info:
        open_publisher("rsspark.fixtures.Feeds#broken", [FIXTURES])
    assert info.value.kind == "raised"
    assert "rsspark.fixtures.Feeds.broken" in str(info.value.__cause__)  # the frame where the factory threw
    with pytest.raises(JvmFactoryError) as info:
        open_publisher("com.nope.Missing#feed", [FIXTURES])
    assert info.value.__cause__ is None and info.value.__suppress_context__  # the message says it all
