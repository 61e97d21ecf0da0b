"""Local time <-> UTC for whole columns: pyspark's per-value rule, applied once per hour.

pyspark reads a naive datetime for a TIMESTAMP as local time (``value.astimezone(timezone.utc)``) and
gives one back as local time (``value.astimezone().replace(tzinfo=None)``), a Python call per value.
Within an hour whose UTC offset does not change, every value moves by that one offset, so the column
is shifted in Arrow with one offset per distinct hour, each found by the same Python call pyspark
makes. A column with a value in an hour where the offset changes (a DST transition: a gap, an
overlap, or a ``fold=1`` value) or outside years 2-9998 is not shifted here (None): the caller then
converts it value by value, exactly as pyspark does. tests/spark/test_types_conversion.py checks both
against pyspark in three zones, DST gap and overlap included.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_HOUR_US = 3_600_000_000
_EPOCH = dt.datetime(1970, 1, 1)
_UTC = dt.UTC
_US = dt.timedelta(microseconds=1)
_DATETIMES = {dt.datetime, type(None)}


def naive_to_utc(values: list[Any]) -> pa.Array | None:
    """``values`` (naive datetimes or None) as UTC instants (``timestamp[us, tz=UTC]``), each read as
    local time; None when the shortcut does not apply (an aware value, a non-datetime, a DST hour)."""
    if not set(map(type, values)) <= _DATETIMES:
        return None  # a date, a str, a subclass: pyspark's converter decides
    try:
        wall = pa.array(values, pa.timestamp("us"))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    if any(getattr(v, "tzinfo", None) is not None or getattr(v, "fold", 0) for v in values):
        return None  # aware (pyarrow would have taken its instant) or fold=1: pyspark's own path
    micros = wall.cast(pa.int64())
    offsets = _offsets(micros, _wall_hour_offset)
    if offsets is None:
        return None
    return pc.subtract(micros, offsets).cast(pa.timestamp("us", tz="UTC"))


def utc_to_local(column: pa.Array | pa.ChunkedArray) -> pa.Array | None:
    """A zoned timestamp column as naive local wall clocks (``timestamp[us]``); None when an hour of it
    has a change of offset (the caller converts value by value)."""
    micros = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    offsets = _offsets(micros, _utc_hour_offset)
    if offsets is None:
        return None
    return pc.add(micros, offsets).cast(pa.timestamp("us"))


def _offsets(micros: Any, hour_offset: Any) -> Any:
    """The offset (µs) of each value's hour, by ``hour_offset(hour)``; None if any hour has none."""
    if micros.null_count == len(micros):
        return pa.nulls(len(micros), pa.int64())
    hours = _floor_hours(micros)
    distinct = [h for h in pc.unique(hours).to_pylist() if h is not None]
    by_hour = []
    for h in distinct:
        off = hour_offset(h)
        if off is None:
            return None
        by_hour.append(off)
    index = pc.index_in(hours, value_set=pa.array(distinct, pa.int64()))
    return pc.take(pa.array(by_hour, pa.int64()), index)


def _floor_hours(micros: Any) -> Any:
    q = pc.divide(micros, _HOUR_US)  # integer division truncates toward zero
    below = pc.less(pc.subtract(micros, pc.multiply(q, _HOUR_US)), 0)
    return pc.subtract(q, pc.cast(below, pa.int64()))


def _wall_hour_offset(hour: int) -> int | None:
    """The offset of local wall-clock hour ``hour`` if one offset reads every value of it (as
    ``astimezone`` reads them, fold 0 and fold 1 alike, and back again), else None."""
    start = _EPOCH + dt.timedelta(hours=hour)
    if not 2 <= start.year <= 9998:
        return None
    end = start + dt.timedelta(hours=1) - _US
    offs = {w.replace(fold=f).astimezone().utcoffset() for w in (start, end) for f in (0, 1)}
    if len(offs) != 1:
        return None  # an overlap or a gap (two offsets), or a transition inside the hour
    off = offs.pop()
    assert off is not None
    for w in (start, end):  # a gap reads as one offset but the instant is not that wall clock
        if (w - off).replace(tzinfo=_UTC).astimezone().replace(tzinfo=None) != w:
            return None
    return off // _US


def _utc_hour_offset(hour: int) -> int | None:
    """The local offset throughout UTC hour ``hour``, or None where it changes within it."""
    start = (_EPOCH + dt.timedelta(hours=hour)).replace(tzinfo=_UTC)
    if not 2 <= start.year <= 9998:
        return None
    a = start.astimezone().utcoffset()
    b = (start + dt.timedelta(hours=1) - _US).astimezone().utcoffset()
    if a is None or a != b:
        return None
    return a // _US


__all__ = ["naive_to_utc", "utc_to_local"]
