"""How the sink turns a batch into Python values (rs_spark.spark.values.to_python): Arrow's own
``to_pylist`` where its values are collect()'s, pyspark's converter elsewhere. The decision is one
pure function of the schema (``_plan``); its cases are the table below. No Spark session."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from rs_spark.spark.values import to_python as tp

UTC_TS = pa.timestamp("us", tz="UTC")  # a TIMESTAMP column (an NTZ one is naive)
STR_LONG = pa.map_(pa.string(), pa.int64())
XY = pa.struct([("x", pa.int32()), ("y", pa.string())])

# (case, columns, structs?, expected plan: None = pyspark's converter, else (zoned, maps))
PLANS = [
    ("plain columns", [pa.int64(), pa.float64(), pa.string()], False, ((), (False, False, False))),
    ("a top-level TIMESTAMP is shifted", [pa.int64(), UTC_TS], False, ((1,), (False, False))),
    ("TIMESTAMP_NTZ is taken as it is", [pa.timestamp("us")], False, ((), (False,))),
    ("a TIMESTAMP inside an array needs pyspark", [pa.list_(UTC_TS)], False, None),
    ("a MAP asks Arrow for dicts", [STR_LONG, pa.int64()], False, ((), (True, False))),
    ("a MAP inside an array too", [pa.list_(STR_LONG)], False, ((), (True,))),
    ("a MAP inside a struct, for dicts", [pa.struct([("m", STR_LONG)])], False, ((), (True,))),
    ("a struct for dicts is a dict", [XY], False, ((), (False,))),
    ("a struct for Rows needs pyspark (a Row)", [XY], True, None),
    ("a map with a struct key needs pyspark", [pa.map_(XY, pa.int64())], False, None),
]


@pytest.mark.parametrize(("case", "types", "structs", "want"), PLANS, ids=[p[0] for p in PLANS])
def test_the_plan_of_a_schema(case, types, structs, want):
    schema = pa.schema([(f"c{i}", t) for i, t in enumerate(types)])
    plan = tp._plan(schema, structs)
    assert (None if plan is None else (plan.zoned, plan.maps)) == want, case


def test_batches_of_alternating_schemas_each_get_their_own_values():
    """The last-schema memo must not hand one schema's plan to another's batches."""
    plain = pa.record_batch([pa.array([1, 2])], names=["a"])
    mapped = pa.record_batch([pa.array([[("k", 1)], []], STR_LONG)], names=["a"])
    zoned = pa.record_batch([pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.UTC)] * 2, UTC_TS)], names=["a"])
    for _ in range(3):
        assert tp.batch_dicts(plain) == [{"a": 1}, {"a": 2}]
        assert tp.batch_dicts(mapped) == [{"a": {"k": 1}}, {"a": {}}]
        assert tp.batch_tuples(mapped) == [({"k": 1},), ({},)]
        assert all(d["a"].tzinfo is None for d in tp.batch_dicts(zoned))  # a naive local wall clock


def test_the_same_schema_with_other_metadata_is_planned_again():
    plain = pa.schema([("a", pa.int64())])
    tagged = plain.with_metadata({b"k": b"v"})
    tp._plan_of(plain, False)
    assert tp._plan_of(tagged, False) == tp._plan(tagged, False)
    assert tp._last_plans[False][0].metadata == {b"k": b"v"}
