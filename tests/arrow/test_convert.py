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


@pytest.mark.parametrize(
    "elements",
    [
        [{"id": 1, "name": "a", "price": 1.5}, {"id": 2, "name": "b", "price": 2.0}],
        [(1, "a", 1.5), (2, "b", 2.0)],
        [[1, "a", 1.5], [2, "b", 2.0]],
        [Trade(1, "a", 1.5), Trade(2, "b", 2.0)],
    ],
)
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


def test_a_chunk_mixing_dicts_and_tuples_converts_every_row_by_its_kind():
    # The dict fast path (from_pylist) would read a tuple as a row of nulls; it must not run.
    expected = [
        {"id": 1, "name": "a", "price": 1.5},
        {"id": 2, "name": "b", "price": 2.0},
        {"id": 3, "name": "c", "price": 3.0},
    ]
    dict_first = [expected[0], (2, "b", 2.0), expected[2]]
    tuple_first = [(1, "a", 1.5), expected[1], (3, "c", 3.0)]
    for elements in (dict_first, tuple_first):
        c = ElementConverter(SCHEMA).convert(elements, 0)
        assert c.malformed == 0 and rows(c.batch) == expected


def test_fast_paths_keep_non_nullable_fields_and_name_a_missing_one():
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    c = ElementConverter(schema).convert([{"id": 1}, {"id": 2, "name": "b"}], 0)  # missing nullable -> null
    assert rows(c.batch) == [{"id": 1, "name": None}, {"id": 2, "name": "b"}]
    assert c.batch.schema.equals(schema)
    assert ElementConverter(schema).convert([(1, None)] * 3, 0).batch.schema.equals(schema)
    with pytest.raises(MalformedElementError) as ei:
        ElementConverter(schema).convert([{"id": 1}] * 5 + [{"name": "x"}], 40)
    assert ei.value.offset == 45 and ei.value.field == "id"
    with pytest.raises(MalformedElementError) as ei:
        ElementConverter(schema).convert([(1, "a")] * 5 + [(None, "x")], 40)
    assert ei.value.offset == 45 and ei.value.field == "id"


def test_try_bulk_declines_chunks_the_slow_path_must_judge():
    conv = ElementConverter(SCHEMA)
    assert conv.try_bulk([(1, "a", 1.5), (2, "b", "cheap")]) is None
    assert conv.try_bulk([{"id": 1, "name": "a", "price": 1.5}, (2, "b")]) is None
    ok = conv.try_bulk([(i, "x", 0.5) for i in range(1000)])
    assert ok is not None and ok.num_rows == 1000 and ok.column(0).to_pylist() == list(range(1000))
