"""``format("reactive")``: the Spark data source class (registered as ``reactive``)."""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from ..arrow.convert import Mode
from .options import OptionError
from .source.batch_reader import ReactiveBatchReader
from .source.options import SourceOptions
from .source.resolve import make_publisher
from .source.single.reader import ReactiveStreamReader


class ReactiveDataSource(DataSource):
    """Reads a Reactive Streams Publisher (and, with the sink, writes into a Subscriber)."""

    @classmethod
    def name(cls) -> str:
        """``reactive``: what ``format(...)`` names."""
        return "reactive"

    def schema(self) -> StructType | str:
        """The option ``schema``, or the schema a ``publisher`` factory's Publisher declares (with the
        corrupt-record column in PERMISSIVE mode); ``OptionError`` when there is none."""
        opts = SourceOptions.parse(self.options)
        declared: Any = opts.schema
        if not declared and opts.publisher:
            declared = getattr(make_publisher(opts), "schema", None)
        if not declared and opts.jvm_publisher:
            raise OptionError(
                f"format('reactive') with option jvmPublisher={opts.jvm_publisher!r} needs a schema: give it with "
                ".schema('value LONG') or option schema (a JVM publisher's element class is only known once it "
                "emits; rs_spark.spark.jvm.schema_of(spark, 'com.example.Quote') gives a record's or bean's)"
            )
        if not declared:
            raise OptionError(
                "format('reactive') needs a schema: give it with .schema('id LONG, name STRING'), with option "
                "schema, or let the publisher declare one as a `schema` attribute (DDL string, StructType or "
                "pyarrow.Schema)"
            )
        if not isinstance(declared, (str, StructType)):
            try:
                declared = from_arrow_schema(declared)
            except Exception as exc:
                raise OptionError(
                    f"the publisher's schema {declared!r} is not DDL, a StructType or a pyarrow.Schema: {exc}"
                ) from exc
        if opts.mode is Mode.PERMISSIVE:
            declared = _with_corrupt_column(declared, opts.corrupt_column)
        return declared

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The streaming reader: one publisher through the driver-side reader process, or several
        endpoints (``executorFetch``) read by executors."""
        opts = SourceOptions.parse(self.options)
        _check_jvm_columns(opts, schema)
        if opts.executor_fetch:
            from .source.partitioned.reader import PartitionedStreamReader

            return PartitionedStreamReader(opts, schema)
        return ReactiveStreamReader(opts, schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        """``spark.read``: a finite publisher read to completion on one executor."""
        opts = SourceOptions.parse(self.options)
        _check_jvm_columns(opts, schema)
        return ReactiveBatchReader(opts, schema)

    # -- sink (rs_spark/spark/sink/writer.py) --------------------------------------------------
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The streaming sink: each committed micro-batch into the Subscriber (see docs/sink.md)."""
        from .sink.options import SinkOptions
        from .sink.writer import ReactiveStreamWriter

        return ReactiveStreamWriter(SinkOptions.parse(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """``df.write``: the whole DataFrame into the Subscriber as one delivery (each write is new data)."""
        from .sink.options import SinkOptions
        from .sink.writer import ReactiveBatchWriter

        return ReactiveBatchWriter(SinkOptions.parse(self.options))


def _check_jvm_columns(opts: SourceOptions, schema: StructType) -> None:
    """Option jvmPublisher: the JVM encodes straight into the source's columns, so a column of a type
    it does not carry fails the query now, at its start (before the JVM or any element), naming the
    column and its Spark type (``rs_spark.jvm.schema.UnsupportedColumn``, an OptionError here)."""
    if not opts.jvm_publisher:
        return
    from ..jvm.schema import UnsupportedColumn
    from .jvm import jvm_schema

    try:
        jvm_schema(schema, skip=opts.corrupt_column)
    except UnsupportedColumn as exc:
        raise OptionError(f"option jvmPublisher={opts.jvm_publisher!r}: {exc}") from None


def _with_corrupt_column(schema: str | StructType, column: str) -> str | StructType:
    if isinstance(schema, str):
        names = [part.strip().split()[0].strip("`").lower() for part in schema.split(",") if part.strip()]
        return schema if column.lower() in names else f"{schema}, `{column}` STRING"
    if column in schema.fieldNames():
        return schema
    return StructType(schema.fields + [StructField(column, StringType(), True)])


__all__ = ["ReactiveDataSource"]
