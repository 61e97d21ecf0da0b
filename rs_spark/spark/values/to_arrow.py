"""Python elements -> Arrow, with pyspark's own rules (``pyspark.sql.conversion.LocalDataToArrowConversion``).

That class is what Spark's Python data source reader and Spark Connect's ``createDataFrame`` use, so
a Publisher's dict makes the row ``createDataFrame`` would make of it. Its per-field converters are
used as they are; only the shape of an element (which value is which field) and a bulk shortcut are
ours:

- an element is a dict (by field name; a missing key is null), a tuple or Row (by position, of the
  schema's width), any other object by its ``__dict__`` (dataclasses too), or a list (by position);
  for a one-column schema also a bare value (pyspark has no such case: a documented extension);
- a column whose values are all of the Python type its converter passes unchanged (``str`` for
  STRING, ``bytes`` for BINARY, anything but None for a non-nullable column of a type pyspark does
  not convert) skips the per-value call; the result is the same by construction.

A naive datetime for a TIMESTAMP column is local time of this process (pyspark's rule, through
``datetime.astimezone``): where ``read_stream`` runs, in the user's zone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql.conversion import LocalDataToArrowConversion
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructType, TimestampType

from ...arrow.convert import DEFAULT_CORRUPT_COLUMN, ElementConverter, Mode
from .from_json import json_reader
from .local_time import naive_to_utc
from .schema import arrow_schema, spark_schema

_NONE = type(None)
_ANY_BUT_NONE: set[type] = set()  # a marker: any value but None passes unchanged


class SparkValues:
    """The :class:`rs_spark.arrow.convert.ValueRules` of a Spark schema (its data fields, in order)."""

    def __init__(self, schema: StructType, from_json: bool = False) -> None:
        fields = schema.fields
        self._names = [f.name for f in fields]
        self._width = len(fields)
        self._convs: list[Callable[[Any], Any] | None] = [
            LocalDataToArrowConversion._create_converter(f.dataType, f.nullable, none_on_identity=True) for f in fields
        ]
        self._plain = [_plain_types(f.dataType, f.nullable) for f in fields]
        # JSON's stand-ins for DECIMAL and BINARY first, as Spark's from_json reads them. The shortcut of
        # _plain never skips the reading: JSON gives no bytes, and pyspark converts every other type
        # holding a DECIMAL or BINARY.
        for i, f in enumerate(fields if from_json else ()):
            read = json_reader(f.dataType)
            if read is not None:
                self._convs[i] = _then(read, self._convs[i])
        self._timestamp = [isinstance(f.dataType, TimestampType) for f in fields]

    # -- ValueRules --------------------------------------------------------------------------
    def columns(self, elements: Sequence[Any]) -> list[Any]:
        cols = self._raw_columns(elements)
        return [self._column(i, col) for i, col in enumerate(cols)]

    def row(self, element: Any) -> Sequence[Any]:
        """``element``'s values by field; raises ValueError saying why it is no row of this schema."""
        if isinstance(element, dict):
            return [element.get(n) for n in self._names]
        if isinstance(element, (tuple, list)):
            if len(element) != self._width:
                raise ValueError(f"expected {self._width} values ({', '.join(self._names)}), got {len(element)}")
            return element
        if self._width == 1 and not hasattr(element, "__dict__"):
            return [element]
        if hasattr(element, "__dict__"):
            d = vars(element)
            return [d.get(n) for n in self._names]
        raise ValueError(f"a {type(element).__name__} cannot be a row of {self._width} columns")

    def value(self, index: int, value: Any) -> Any:
        conv = self._convs[index]
        return value if conv is None else conv(value)

    # -- steps ------------------------------------------------------------------------------
    def _raw_columns(self, elements: Sequence[Any]) -> list[list[Any]]:
        """The values of each field, before conversion."""
        kinds = set(map(type, elements))
        if kinds == {dict}:
            return [[e.get(n) for e in elements] for n in self._names]
        if kinds == {tuple} or all(isinstance(e, tuple) for e in elements):
            width = self._width
            if any(len(e) != width for e in elements):
                raise ValueError("an element has another width than the schema")
            return [list(c) for c in zip(*elements, strict=True)] if width else []
        rows = [self.row(e) for e in elements]
        return [list(c) for c in zip(*rows, strict=True)] if self._width else []

    def _column(self, i: int, col: list[Any]) -> Any:
        conv = self._convs[i]
        if conv is None:
            return col
        if self._timestamp[i]:
            shifted = naive_to_utc(col)  # pyspark's rule, an offset per hour (local_time.py)
            if shifted is not None:
                return shifted
        plain = self._plain[i]
        if plain is not None:
            kinds = set(map(type, col))
            if kinds <= plain if plain is not _ANY_BUT_NONE else _NONE not in kinds:
                return col  # every value is one the converter passes unchanged
        return [conv(v) for v in col]


def _then(read: Callable[[Any], Any], conv: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """``read``, then pyspark's converter ``conv`` (None: the value as ``read`` left it)."""
    if conv is None:
        return read
    return lambda value: conv(None if value is None else read(value))


def _plain_types(data_type: Any, nullable: bool) -> set[type] | None:
    """The Python types whose values pyspark's converter for this field returns unchanged (None: no
    shortcut, every value goes through the converter)."""
    extra = {_NONE} if nullable else set()
    if isinstance(data_type, StringType):
        return {str} | extra
    if isinstance(data_type, BinaryType):
        return {bytes} | extra
    if (
        not nullable
        and not isinstance(data_type, ArrayType)
        and not LocalDataToArrowConversion._need_converter(data_type, True)
    ):
        return _ANY_BUT_NONE  # pyspark converts these (ints, floats, dates...) only to refuse None
    return None


def element_converter(
    schema: Any,
    mode: Mode | str = Mode.FAILFAST,
    corrupt_column: str = DEFAULT_CORRUPT_COLUMN,
    add_corrupt_column: bool = False,
    from_json: bool = False,
) -> ElementConverter:
    """An :class:`~rs_spark.arrow.convert.ElementConverter` for ``schema`` (StructType, DDL or Arrow
    schema) with pyspark's value rules, the corrupt-record column (PERMISSIVE) left out of the rules.
    ``from_json``: the elements are JSON values (codec json), whose stand-ins for DECIMAL and BINARY
    are read first as Spark's ``from_json`` reads them (:mod:`.from_json`)."""
    struct = spark_schema(schema) if not isinstance(schema, str) else None
    target = arrow_schema(schema) if isinstance(schema, (str, StructType)) else schema
    if struct is None:
        struct = spark_schema(target)
    parsed = mode if isinstance(mode, Mode) else Mode.parse(mode)
    data = StructType([f for f in struct.fields if not (parsed is Mode.PERMISSIVE and f.name == corrupt_column)])
    return ElementConverter(target, parsed, corrupt_column, add_corrupt_column, rules=SparkValues(data, from_json))


__all__ = ["SparkValues", "element_converter"]
