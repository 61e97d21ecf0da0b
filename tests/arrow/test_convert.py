"""Elements -> Arrow: every element kind, and the three malformed modes naming offset and field."""
from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from rs_spark.arrow import ElementConverter, MalformedElementError, Mode, from_ipc, to_ipc

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64())])


@dataclasses.dataclass
class Trade:
    id: int
    name: str
    price: float


def rows(batch):
    return batch.to_pylist()


@pytest.mark.parametrize("elements", [
    [{"id": 1, "name": "a", "price": 1.5}, {"id": 2, "name": "b", "price": 2.0}],
    [(1, "a", 1.5), (2, "b", 2.0)],
    [[1, "a", 1.5], [2, "b", 2.0]],
    [Trade(1, "a", 1.5), Trade(2, "b", 2.0)],
])
def test_element_kinds_convert_to_the_same_rows(elements):
    c = ElementConverter(SCHEMA).convert(elements, 0)
    assert rows(c.batch) == [{"id": 1, "name": "a", "price": 1.5}, {"id": 2, "name": "b", "price": 2.0}]
    assert c.batch.schema.equals(SCHEMA)


def test_spark_rows_convert_by_position():
    from pyspark.sql import Row
    c = ElementConverter(SCHEMA).convert([Row(id=1, name="a", price=1.5)], 0)
    assert rows(c.batch) == [{"id": 1, "name": "a", "price": 1.5}]


def test_scalars_fill_a_one_column_schema():
    c = ElementConverter(pa.schema([("value", pa.int64())])).convert([1, 2, 3], 0)
    assert c.batch.column(0).to_pylist() == [1, 2, 3]


def test_record_batches_are_selected_by_name_and_cast():
    b = pa.RecordBatch.from_pydict({"price": [1.0], "extra": ["x"], "name": ["n"], "id": pa.array([7], pa.int32())})
    c = ElementConverter(SCHEMA).convert([b, b], 10)
    assert rows(c.batch) == [{"id": 7, "name": "n", "price": 1.0}] * 2


def test_failfast_names_offset_field_and_the_fix():
    with pytest.raises(MalformedElementError) as ei:
        ElementConverter(SCHEMA).convert([(1, "a", 1.0), (2, "b", "cheap")], 100)
    e = ei.value
    assert e.offset == 101 and e.field == "price"
    msg = str(e)
    assert "offset 101" in msg and "'price'" in msg and "PERMISSIVE" in msg and "DROPMALFORMED" in msg


def test_failfast_wrong_width_and_missing_non_nullable_field():
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    with pytest.raises(MalformedElementError, match="expected 2 values"):
        ElementConverter(schema).convert([(1,)], 0)
    with pytest.raises(MalformedElementError, match="'id'.*not nullable"):
        ElementConverter(schema).convert([{"name": "x"}], 0)


def test_permissive_keeps_the_element_as_text_in_the_corrupt_column():
    conv = ElementConverter(SCHEMA, Mode.PERMISSIVE)
    c = conv.convert([(1, "a", 1.0), (2, "b", "cheap")], 0)
    assert conv.output_schema.names == ["id", "name", "price", "_corrupt_record"]
    assert rows(c.batch) == [
        {"id": 1, "name": "a", "price": 1.0, "_corrupt_record": None},
        {"id": None, "name": None, "price": None, "_corrupt_record": '[2, "b", "cheap"]'},
    ]
    assert c.malformed == 1 and c.dropped == 0


def test_permissive_with_a_custom_corrupt_column_name():
    conv = ElementConverter(SCHEMA, "permissive", corrupt_column="bad")
    assert conv.output_schema.names[-1] == "bad"


def test_dropmalformed_drops_and_counts():
    c = ElementConverter(SCHEMA, Mode.DROPMALFORMED).convert([(1, "a", 1.0), "junk", (3, "c", 3.0)], 0)
    assert [r["id"] for r in rows(c.batch)] == [1, 3]
    assert c.dropped == 1 and c.malformed == 1


def test_malformed_record_batch_in_failfast_names_its_first_offset():
    bad = pa.RecordBatch.from_pydict({"id": ["x"], "name": ["n"], "price": [1.0]})
    with pytest.raises(MalformedElementError, match="offset 5"):
        ElementConverter(SCHEMA).convert([bad], 5)


def test_unknown_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="FAILFAST.*PERMISSIVE.*DROPMALFORMED"):
        ElementConverter(SCHEMA, "lenient")


def test_ipc_round_trip():
    c = ElementConverter(SCHEMA).convert([(1, "a", 1.0)], 0)
    assert rows(from_ipc(to_ipc([c.batch, c.batch], SCHEMA))[1]) == rows(c.batch)
