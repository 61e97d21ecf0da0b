"""Elements -> Arrow record batches, with Spark's malformed-record modes.

Elements may be dicts (by field name), tuples / lists / Spark Rows (by position),
dataclass instances, scalars (for a one-column schema), or pyarrow RecordBatches and
Tables (the fast path: no per-row Python work). Conversion tries the fast bulk path first;
only when it fails does it look at elements one by one to name the bad element's offset
and field, then applies the mode:

- ``FAILFAST`` (default): raise :class:`MalformedElementError` naming offset and field.
- ``PERMISSIVE``: keep a row of nulls with the element's text in the corrupt-record column.
- ``DROPMALFORMED``: drop the element and count it.
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import json
import operator
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa

DEFAULT_CORRUPT_COLUMN = "_corrupt_record"


class ValueRules(Protocol):
    """How Python values become the schema's columns, where an upper layer has its own rules (Spark's:
    :class:`rs_spark.spark.values.SparkValues`). Without rules, values go to ``pyarrow.array`` as they are."""

    def columns(self, elements: Sequence[Any]) -> list[Any]:
        """Each field's values for ``elements``, ready for ``pyarrow.array`` (or already an Arrow array);
        raises on any element refused."""
        ...

    def row(self, element: Any) -> Sequence[Any]:
        """One element's values, a value per field in order; raises ValueError/TypeError saying why not."""
        ...

    def value(self, index: int, value: Any) -> Any:
        """One value of field ``index``, ready for ``pyarrow.array``; raises saying why it is refused."""
        ...


class Mode(enum.Enum):
    """What to do with a malformed element (option ``mode``): fail naming it (``FAILFAST``), keep it
    as text in the corrupt-record column (``PERMISSIVE``), or drop and count it (``DROPMALFORMED``)."""

    FAILFAST = "FAILFAST"
    PERMISSIVE = "PERMISSIVE"
    DROPMALFORMED = "DROPMALFORMED"

    @classmethod
    def parse(cls, value: str) -> Mode:
        """The mode named ``value`` (any case); ValueError lists the three."""
        try:
            return cls(str(value).upper())
        except ValueError:
            raise ValueError(
                f"option mode={value!r} is not a parse mode; use FAILFAST (default), PERMISSIVE or DROPMALFORMED"
            ) from None


class MalformedElementError(ValueError):
    """An element does not fit the schema. ``offset`` is its position in the stream."""

    def __init__(self, offset: int, field: str | None, detail: str, element: Any) -> None:
        where = f"field '{field}'" if field else "the element as a whole"
        shown = _short_repr(element)
        super().__init__(
            f"element at offset {offset} is malformed: {where}: {detail}. Element: {shown}. "
            "Fix the publisher or the schema, or set option mode=PERMISSIVE (keeps it as text in the "
            f"'{DEFAULT_CORRUPT_COLUMN}' column, see columnNameOfCorruptRecord) or mode=DROPMALFORMED "
            "(drops and counts it)."
        )
        self.offset = offset
        self.field = field
        self.element = element


def _short_repr(x: Any, limit: int = 200) -> str:
    r = repr(x)
    return r if len(r) <= limit else r[:limit] + "...(truncated)"


@dataclasses.dataclass
class Converted:
    """One converted chunk: ``batch`` plus the offsets (relative) of dropped elements."""

    batch: pa.RecordBatch
    dropped: int
    malformed: int


class ElementConverter:
    """Converts lists of elements to RecordBatches of ``schema``.

    In PERMISSIVE mode the output schema is ``schema`` plus the corrupt-record column (a
    nullable string) if ``schema`` does not already have it; see :attr:`output_schema`.
    """

    def __init__(
        self,
        schema: pa.Schema,
        mode: Mode | str = Mode.FAILFAST,
        corrupt_column: str = DEFAULT_CORRUPT_COLUMN,
        add_corrupt_column: bool = True,
        rules: ValueRules | None = None,
    ) -> None:
        self.mode = mode if isinstance(mode, Mode) else Mode.parse(mode)
        self.rules = rules  # the upper layer's value rules (Spark's), or None: values as pyarrow takes them
        self.corrupt_column = corrupt_column
        if self.mode is Mode.PERMISSIVE and schema.get_field_index(corrupt_column) < 0:
            if add_corrupt_column:
                schema = schema.append(pa.field(corrupt_column, pa.string(), nullable=True))
            else:
                # As in Spark's JSON source: without the column in the schema, a malformed
                # element becomes a row of nulls and its text is not kept.
                self.corrupt_column = ""
        self.output_schema = schema
        # The fields an element must supply (all but the corrupt column).
        self._data_fields = [f for f in schema if not (self.mode is Mode.PERMISSIVE and f.name == self.corrupt_column)]
        self._data_schema = pa.schema(self._data_fields)
        self._struct_type = pa.struct(self._data_fields)  # for the tuple fast path
        self._names = [f.name for f in self._data_fields]

    # -- public ---------------------------------------------------------------------------
    def convert(self, elements: Sequence[Any], first_offset: int) -> Converted:
        """Convert ``elements`` whose first has stream offset ``first_offset``."""
        if not elements:
            return Converted(pa.RecordBatch.from_pylist([], schema=self.output_schema), 0, 0)
        first = elements[0]
        if isinstance(first, (pa.RecordBatch, pa.Table)):
            return self._convert_arrow(elements, first_offset)
        try:
            batch = self._bulk(elements)
        except Exception:
            return self._one_by_one(elements, first_offset)
        return Converted(self._finish(batch), 0, 0)

    def try_bulk(self, elements: Sequence[Any]) -> pa.RecordBatch | None:
        """Convert plain (non-Arrow) elements on the fast path only: the batch (one row per
        element), or None when any element needs the slow path (malformed, or not plain).
        Safe to call from another thread while :meth:`convert` runs."""
        if not elements or isinstance(elements[0], (pa.RecordBatch, pa.Table)):
            return None
        try:
            return self._finish(self._bulk(elements))
        except Exception:
            return None

    def rows_of(self, element: Any) -> int:
        """How many rows an element contributes (a RecordBatch or Table: its rows; else 1)."""
        if isinstance(element, (pa.RecordBatch, pa.Table)):
            return element.num_rows
        return 1

    # -- bulk paths -----------------------------------------------------------------------
    def _bulk(self, elements: Sequence[Any]) -> pa.RecordBatch:
        if self.rules is not None:
            return self._bulk_by_rules(elements)
        first = elements[0]
        schema = self._data_schema
        if isinstance(first, dict):
            if all(type(e) is dict for e in elements):
                # from_pylist is about 2x the column-by-column path, but reads a missing key as
                # null (as the slow path does for nullable fields; _check_nulls catches the rest)
                # and any non-dict as a row of nulls, hence the exact-type check above.
                batch = pa.RecordBatch.from_pylist(list(elements), schema=schema)
                self._check_nulls(batch.columns)
                return batch
            # Column by column: a missing key (KeyError) or a non-dict (TypeError) sends the
            # chunk to the slow path, which names the offending element.
            arrays = [pa.array(list(map(operator.itemgetter(f.name), elements)), type=f.type) for f in schema]
            self._check_nulls(arrays)
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
        if isinstance(first, tuple):
            try:  # tuples (and Rows) as struct values, positionally: about 8x the column path
                batch = pa.RecordBatch.from_struct_array(pa.array(list(elements), type=self._struct_type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                pass  # lists, wrong widths or bad values: the column path below sorts it out
            else:
                self._check_nulls(batch.columns)
                return batch
        if isinstance(first, (tuple, list)):
            width = len(schema)
            for e in elements:
                if not isinstance(e, (tuple, list)) or len(e) != width:
                    raise ValueError("not all elements are tuples of the schema's width")
            columns = list(zip(*elements, strict=False))
            arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=False)]
            self._check_nulls(arrays)
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
        if dataclasses.is_dataclass(first) and not isinstance(first, type):
            rows = [self._dataclass_row(e) for e in elements]
            return pa.RecordBatch.from_pylist(rows, schema=schema)
        if len(schema) == 1:
            return pa.RecordBatch.from_arrays([pa.array(list(elements), type=schema[0].type)], schema=schema)
        raise TypeError(f"cannot convert {type(first).__name__} elements to a {len(schema)}-column row")

    def _bulk_by_rules(self, elements: Sequence[Any]) -> pa.RecordBatch:
        assert self.rules is not None
        columns = self.rules.columns(elements)
        arrays = [
            col.cast(f.type) if isinstance(col, pa.Array) else pa.array(col, type=f.type)
            for col, f in zip(columns, self._data_fields, strict=True)
        ]
        self._check_nulls(arrays)
        return pa.RecordBatch.from_arrays(arrays, schema=self._data_schema)

    def _check_nulls(self, arrays: list[pa.Array]) -> None:
        for a, f in zip(arrays, self._data_fields, strict=False):
            if a.null_count and not f.nullable:
                raise ValueError(f"nulls in non-nullable field {f.name}")

    def _dataclass_row(self, e: Any) -> dict:
        if not (dataclasses.is_dataclass(e) and not isinstance(e, type)):
            raise TypeError("not a dataclass instance")
        return {f.name: getattr(e, f.name) for f in dataclasses.fields(e)}

    def _finish(self, batch: pa.RecordBatch, corrupt: list[str | None] | None = None) -> pa.RecordBatch:
        if self.mode is not Mode.PERMISSIVE or not self.corrupt_column:
            return batch
        arrays = []
        for f in self.output_schema:
            if f.name == self.corrupt_column:
                arrays.append(pa.array(corrupt if corrupt is not None else [None] * batch.num_rows, pa.string()))
            else:
                arrays.append(batch.column(batch.schema.get_field_index(f.name)))
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema)

    # -- the slow path that finds and handles malformed elements --------------------------
    def _one_by_one(self, elements: Sequence[Any], first_offset: int) -> Converted:
        good: list[dict] = []
        corrupt: list[str | None] = []
        dropped = malformed = 0
        null_row = {n: None for n in self._names}
        for i, e in enumerate(elements):
            row, field, detail = self._check_one(e)
            if row is not None:
                good.append(row)
                corrupt.append(None)
                continue
            malformed += 1
            if self.mode is Mode.FAILFAST:
                raise MalformedElementError(first_offset + i, field, detail, e)
            if self.mode is Mode.DROPMALFORMED:
                dropped += 1
                continue
            good.append(dict(null_row))
            corrupt.append(_as_text(e))
        batch = pa.RecordBatch.from_pylist(good, schema=self._data_schema)
        return Converted(self._finish(batch, corrupt), dropped, malformed)

    def _check_one(self, e: Any) -> tuple[dict | None, str | None, str]:
        """Return (row, None, "") if ``e`` fits, else (None, field, what is wrong)."""
        if self.rules is not None:
            return self._check_by_rules(e)
        fields = self._data_fields
        if isinstance(e, dict):
            values = e
        elif isinstance(e, (tuple, list)):
            if len(e) != len(fields):
                return None, None, f"expected {len(fields)} values ({', '.join(self._names)}), got {len(e)}"
            values = dict(zip(self._names, e, strict=False))
        elif dataclasses.is_dataclass(e) and not isinstance(e, type):
            values = self._dataclass_row(e)
        elif len(fields) == 1 and not isinstance(e, (pa.RecordBatch, pa.Table)):
            values = {fields[0].name: e}
        else:
            return (
                None,
                None,
                (
                    f"a {type(e).__name__} cannot be a row of {len(fields)} columns; send dicts, "
                    "tuples, dataclasses or RecordBatches"
                ),
            )
        row: dict[str, Any] = {}
        for f in fields:
            if f.name not in values:
                if f.nullable:
                    row[f.name] = None
                    continue
                return None, f.name, "missing (the field is not nullable)"
            v = values[f.name]
            if v is None and not f.nullable:
                return None, f.name, "is None but the field is not nullable"
            try:
                pa.array([v], type=f.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
                return None, f.name, f"expected {f.type}, got {_short_repr(v, 60)} ({type(v).__name__}): {exc}"
            row[f.name] = v
        return row, None, ""

    def _check_by_rules(self, e: Any) -> tuple[dict | None, str | None, str]:
        assert self.rules is not None
        try:
            values = self.rules.row(e)
        except (ValueError, TypeError, AssertionError) as exc:
            return None, None, f"{_reason(exc)}; send dicts, tuples, Rows, dataclasses or RecordBatches"
        row: dict[str, Any] = {}
        for i, f in enumerate(self._data_fields):
            v = values[i]
            try:
                v = self.rules.value(i, v)
                pa.array([v], type=f.type)
            except Exception as exc:  # pyspark's converters raise several kinds (AssertionError too)
                given = values[i]
                return (
                    None,
                    f.name,
                    f"expected {f.type}, got {_short_repr(given, 60)} ({type(given).__name__}): {_reason(exc)}",
                )
            if v is None and not f.nullable:
                return None, f.name, "is None but the field is not nullable"
            row[f.name] = v
        return row, None, ""

    # -- Arrow elements ---------------------------------------------------------------------
    def _convert_arrow(self, elements: Sequence[Any], first_offset: int) -> Converted:
        batches: list[pa.RecordBatch] = []
        offset = first_offset
        dropped = malformed = 0
        for e in elements:
            if not isinstance(e, (pa.RecordBatch, pa.Table)):
                # Mixed element kinds: convert the non-Arrow one on its own.
                c = self.convert([e], offset)
                batches.append(c.batch)
                dropped += c.dropped
                malformed += c.malformed
                offset += 1
                continue
            n = e.num_rows
            try:
                batches.extend(self._conform_arrow(e))
            except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
                malformed += n
                if self.mode is Mode.FAILFAST:
                    raise MalformedElementError(
                        offset,
                        None,
                        f"a batch of {n} rows does not fit the schema {self._data_schema}: {exc}",
                        f"<{type(e).__name__} {e.schema}>",
                    ) from None
                if self.mode is Mode.DROPMALFORMED:
                    dropped += n
                else:
                    text = f"<{type(e).__name__} of {n} rows with schema {e.schema}: {exc}>"
                    nulls = pa.RecordBatch.from_pylist([{}] * n, schema=self._data_schema)
                    batches.append(self._finish(nulls, [text] * n))
            offset += n
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return Converted(pa.RecordBatch.from_pylist([], schema=self.output_schema), dropped, malformed)
        if len(batches) == 1:
            return Converted(batches[0], dropped, malformed)
        table = pa.Table.from_batches(batches, schema=self.output_schema).combine_chunks()
        out = table.to_batches()
        return Converted(
            out[0] if out else pa.RecordBatch.from_pylist([], schema=self.output_schema), dropped, malformed
        )

    def _conform_arrow(self, e: Any) -> list[pa.RecordBatch]:
        """Select the schema's columns by name and cast them; raises if impossible."""
        if e.schema.equals(self._data_schema) and self.mode is not Mode.PERMISSIVE:
            return e.to_batches() if isinstance(e, pa.Table) else [e]
        cols = []
        for f in self._data_fields:
            idx = e.schema.get_field_index(f.name)
            if idx < 0:
                if not f.nullable:
                    raise KeyError(f"column '{f.name}' is missing")
                cols.append(pa.nulls(e.num_rows, f.type))
                continue
            col = e.column(idx)
            if not col.type.equals(f.type):
                _check_zone(f, col.type)
                col = col.cast(f.type)
            if not f.nullable and col.null_count:
                raise pa.ArrowInvalid(f"column '{f.name}' has nulls but the field is not nullable")
            cols.append(col)
        kept = self._kept_corrupt(e)
        if isinstance(e, pa.Table):
            t = pa.Table.from_arrays(cols, schema=self._data_schema)
            if kept is not None:  # a Table's batches: keep each one's slice of the texts
                out, at = [], 0
                for b in t.to_batches():
                    out.append(self._finish(b, kept[at : at + b.num_rows]))
                    at += b.num_rows
                return out
            return [self._finish(b) for b in t.to_batches()]
        return [self._finish(pa.RecordBatch.from_arrays(cols, schema=self._data_schema), kept)]

    def _kept_corrupt(self, e: Any) -> list[str | None] | None:
        """PERMISSIVE: the corrupt-record texts a batch already carries (converted upstream, e.g. where
        read_stream's Publisher lives), else None."""
        if self.mode is not Mode.PERMISSIVE or not self.corrupt_column:
            return None
        idx = e.schema.get_field_index(self.corrupt_column)
        return None if idx < 0 else e.column(idx).cast(pa.string()).to_pylist()


def _check_zone(field: pa.Field, given: pa.DataType) -> None:
    """A naive Arrow timestamp is a wall clock, a zoned one an instant: a cast between them would read the
    wall clock as UTC or drop the zone. Refuse either, saying what to send."""
    want = field.type
    if pa.types.is_timestamp(want) and want.tz is None and pa.types.is_timestamp(given) and given.tz is not None:
        raise pa.ArrowInvalid(
            f"column '{field.name}' is a timestamp with time zone {given.tz} (an instant), and the field is "
            "TIMESTAMP_NTZ (a wall clock): send naive timestamps (pa.timestamp('us')), or declare the field TIMESTAMP"
        )
    if pa.types.is_timestamp(want) and want.tz is not None and pa.types.is_timestamp(given) and given.tz is None:
        raise pa.ArrowInvalid(
            f"column '{field.name}' is a timestamp without a time zone ({given}), and the field is TIMESTAMP (an "
            "instant): give the column its zone (pa.timestamp('us', tz='UTC') or the zone of its wall clock), or "
            "declare the field TIMESTAMP_NTZ"
        )


def _reason(exc: BaseException) -> str:
    """What a refusal says (a bare assertion from pyspark's converters says nothing: say what it means)."""
    if isinstance(exc, decimal.InvalidOperation):
        return "more digits than the column's precision and scale hold"
    text = str(exc).strip()
    if text:
        return text
    return "not a value of this type under pyspark's conversion rules (docs/types.md)"


def _as_text(e: Any) -> str:
    try:
        if dataclasses.is_dataclass(e) and not isinstance(e, type):
            e = dataclasses.asdict(e)
        return json.dumps(e, default=repr)
    except Exception:
        return repr(e)


__all__ = ["Mode", "MalformedElementError", "ElementConverter", "Converted", "DEFAULT_CORRUPT_COLUMN", "ValueRules"]
