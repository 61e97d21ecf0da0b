"""The JVM shim inside a Spark driver: one call gives ``spark._jvm`` with the shim's classes.

The Spark side of :mod:`rs_spark.jvm` (which starts and talks to the shim without pyspark): this module
puts the shim jar on a session's classpath and reads JVM Publishers as DataFrames.

    from rs_spark.spark.jvm import jvm, read_jvm_stream
    j = jvm(spark)                                    # the shim jar joins the driver's classpath
    pub = j.rsspark.jvm.Sources.submissionLongs(1000)  # any Flow.Publisher / org.reactivestreams.Publisher
    df = read_jvm_stream(spark, pub, "value:int64", options={"maxRecordsPerTrigger": 500})

Or put the jar on ``spark.jars`` when building the session: ``configure(SparkSession.builder)``.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..jvm.gateway import ShimNotFound, jar_path, shim
from .internals import add_to_driver_classpath
from .options import OptionValue

log = logging.getLogger("rs_spark.jvm")

if TYPE_CHECKING:
    import pyarrow as pa
    from py4j.java_gateway import JavaObject


def jars(extra_jars: Iterable[str] = ()) -> list[str]:
    """The shim jar and ``extra_jars`` (e.g. ``rs_spark.jvm.debian_jar("reactive-streams")``)."""
    return [jar_path(), *extra_jars]


def configure(builder: Any, extra_jars: Iterable[str] = ()) -> Any:
    """Add the shim (and ``extra_jars``) to ``spark.jars`` of a ``SparkSession.Builder``."""
    return builder.config("spark.jars", ",".join(jars(extra_jars)))


EXTENSIONS = "rsspark.spark.ReactiveExtensions"
"""The shim's Spark session extension, a value for ``spark.sql.extensions`` (the jar on ``spark.jars`` too):
``start()`` then refuses ``writeStream.format("reactive").outputMode("update")``, which Spark would fail at its
first micro-batch in its own words, with rs_spark's message saying what to use
(:mod:`rs_spark.spark.sink.mode_refusal`). ``local_session`` sets both; for a session of your own:
``configure(builder).config("spark.sql.extensions", EXTENSIONS)`` (comma-separated after any of yours)."""


def with_shim(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` with the shim jar added to its ``spark.jars`` and :data:`EXTENSIONS` to its ``spark.sql.extensions``
    (what they held is kept, first); unchanged when this install has no usable jar (a wheel built with
    ``RS_SPARK_SKIP_JVM=1``, a checkout whose shim was not built, a stale jar)."""
    try:
        jar = jar_path()
    except ShimNotFound as exc:  # also ShimVersionMismatch
        log.debug("the shim's session extension is left out: %s", exc)
        return dict(conf)
    return {
        **conf,
        "spark.jars": _joined(conf.get("spark.jars"), jar, same=os.path.abspath),
        "spark.sql.extensions": _joined(conf.get("spark.sql.extensions"), EXTENSIONS),
    }


def _joined(value: Any, item: str, same: Any = str) -> str:
    """``value`` (a comma-separated list, or None) with ``item`` after it unless it holds it already."""
    items = [v.strip() for v in str(value or "").split(",") if v.strip()]
    if same(item) not in {same(v.split(":", 1)[1] if v.startswith("file:") else v) for v in items}:
        items.append(item)
    return ",".join(items)


def jvm(spark: SparkSession, extra_jars: Iterable[str] = ()) -> Any:
    """``spark._jvm`` with the shim (and ``extra_jars``) loadable: the one helper call.

    If the session was not started with the jars on ``spark.jars``, they are added now to the
    driver's class loader (Spark's ``MutableURLClassLoader``: :mod:`rs_spark.spark.internals`) and
    with ``addJar`` for executors.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        raise ShimNotFound(
            "rs_spark.spark.jvm needs the driver JVM (spark._jvm), and a Spark Connect client has none: the "
            "driver runs in the Connect server. Read a JVM publisher with option jvmPublisher "
            "('com.example.Feeds#quotes', plus jvmJars): the reader process on the server starts its own JVM"
        )
    j: Any = spark._jvm  # a py4j JVMView: untyped
    wanted = jars(extra_jars)
    missing = [p for p in wanted if not _loaded(spark, p)]
    if missing:
        add_to_driver_classpath(spark, missing)
        _loaded_jars(spark).update(os.path.abspath(p) for p in missing)
    shim(j)
    return j


_JARS: weakref.WeakKeyDictionary[SparkSession, set[str]] = weakref.WeakKeyDictionary()
"""Per session: the jars on its driver's classpath (from spark.jars, then the ones added here)."""


def _loaded_jars(spark: SparkSession) -> set[str]:
    s = _JARS.get(spark)
    if s is None:
        conf = spark.sparkContext.getConf().get("spark.jars", "") or ""
        s = {os.path.abspath(p.split(":", 1)[1] if p.startswith("file:") else p) for p in conf.split(",") if p}
        _JARS[spark] = s
    return s


def _loaded(spark: SparkSession, path: str) -> bool:
    return os.path.abspath(path) in _loaded_jars(spark)


def publisher(spark: SparkSession, jvm_publisher: Any, schema: Any = None, **kwargs: Any) -> Any:
    """A :class:`rs_spark.jvm.JvmPublisher` over ``jvm_publisher`` in this driver; ``schema`` may be
    a Spark DDL string or StructType too (see :func:`jvm_schema`: a column the shim does not carry
    is refused here, naming its Spark type)."""
    from ..jvm import JvmPublisher

    return JvmPublisher(jvm_publisher, jvm(spark), schema=jvm_schema(schema), **kwargs)


def read_jvm_stream(
    spark: SparkSession,
    jvm_publisher: JavaObject,
    schema: str | StructType | pa.Schema | None = None,
    *,
    options: Mapping[str, OptionValue] | None = None,
    batch_rows: int = 65536,
    codec: str = "arrow",
) -> DataFrame:
    """``spark.readStream.format("reactive")`` over a JVM Publisher built in this driver.

    Spark's reader process has no py4j gateway, so the Publisher is wrapped here as a Python
    Publisher of Arrow batches and served to the reader by :func:`rs_spark.read_stream` (codec
    ``arrow``). ``schema``: DDL, StructType, pyarrow.Schema or ``"id:int64,name:string"``;
    None: declared by a record / bean / scalar class via ``schema_of`` is not known up front,
    so give one. A column of a type the shim does not carry (ARRAY, MAP, STRUCT, intervals, ...)
    raises :class:`rs_spark.jvm.schema.UnsupportedColumn` here, before anything runs (docs/jvm.md).
    ``options``: the source's options, e.g. ``{"maxRecordsPerTrigger": 1000}``. ``batch_rows``: most
    rows per Arrow batch the JVM hands over.
    """
    from .source.read_stream import read_stream

    spark_opts = dict(options or {})
    pa_schema = jvm_schema(schema)
    if pa_schema is None:
        raise ValueError(
            "read_jvm_stream() needs schema= (DDL, StructType, pyarrow.Schema or 'name:type,...'); "
            "rs_spark.spark.jvm.schema_of(spark, 'com.acme.MyRecord') gives a record's or bean's"
        )
    pub = publisher(spark, jvm_publisher, pa_schema, elements="batches", batch_rows=batch_rows)
    return read_stream(spark, pub, schema=pa_schema, options=spark_opts, codec=codec)


def schema_of(spark: SparkSession, class_name: str, extra_jars: Iterable[str] = ()) -> Any:
    """The ``pyarrow.Schema`` a JVM class declares (record components, bean properties, or ``value``)."""
    from ..jvm.schema import parse_spec

    return parse_spec(shim(jvm(spark, extra_jars)).schemaOf(class_name))


def arrow_schema(schema: Any) -> Any | None:
    """None, shim spec text, pyarrow.Schema, Spark DDL or StructType -> pyarrow.Schema (or None)."""
    import pyarrow as pa

    if schema is None or isinstance(schema, pa.Schema):
        return schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    from .values import arrow_schema as of_spark

    if isinstance(schema, str):
        from ..jvm.schema import parse_spec

        try:
            return parse_spec(schema)
        except ValueError:
            schema = _parse_datatype_string(schema)
    if isinstance(schema, StructType):
        return of_spark(schema)
    raise TypeError(f"schema {schema!r}: use DDL, StructType, pyarrow.Schema or 'name:type,...'")


def jvm_schema(schema: Any, skip: str | None = None) -> Any | None:
    """:func:`arrow_schema`, refusing a column the JVM shim does not carry with
    :class:`rs_spark.jvm.schema.UnsupportedColumn` naming the column, its Spark type (and Arrow type)
    and what the shim carries. ``skip``: a column left out (the source's corrupt-record column)."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    from ..jvm.schema import UnsupportedColumn, parse_spec, spec_type

    if schema is None:
        return None
    if isinstance(schema, str):
        try:
            return _without(parse_spec(schema), skip)
        except ValueError:
            schema = _parse_datatype_string(schema)
    if isinstance(schema, StructType):
        return _of_struct(schema, skip)
    import pyarrow as pa

    if not isinstance(schema, pa.Schema):
        return arrow_schema(schema)  # raises TypeError saying what a schema may be
    pa_schema = schema
    for f in pa_schema:
        if f.name != skip and spec_type(f.type) is None:
            raise UnsupportedColumn(f.name, f.type, _spark_type_of_arrow(f.type))
    return _without(pa_schema, skip)


def _of_struct(struct: StructType, skip: str | None) -> pa.Schema:
    """The Arrow schema of ``struct`` as pyspark maps it (TIMESTAMP at UTC), field by field so that
    a column refused names its Spark type."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    from ..jvm.schema import UnsupportedColumn, spec_type

    fields = []
    for sf in struct.fields:
        if sf.name == skip:
            continue
        try:
            at = to_arrow_type(sf.dataType, timezone="UTC")
        except Exception:  # pyspark converts it to no Arrow type (year-month intervals, CHAR, ...)
            raise UnsupportedColumn(sf.name, None, sf.dataType.simpleString()) from None
        if spec_type(at) is None:
            raise UnsupportedColumn(sf.name, at, sf.dataType.simpleString())
        fields.append(pa.field(sf.name, at, nullable=sf.nullable))
    return pa.schema(fields)


def _without(schema: pa.Schema, skip: str | None) -> pa.Schema:
    import pyarrow as pa

    return schema if skip is None else pa.schema([f for f in schema if f.name != skip])


def _spark_type_of_arrow(t: pa.DataType) -> str | None:
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return str(from_arrow_type(t, prefer_timestamp_ntz=True).simpleString())
    except Exception:  # no Spark type for it: the Arrow type says it all
        return None


__all__ = [
    "jars",
    "configure",
    "EXTENSIONS",
    "with_shim",
    "jvm",
    "publisher",
    "read_jvm_stream",
    "schema_of",
    "arrow_schema",
    "jvm_schema",
]
