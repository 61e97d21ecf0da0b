"""rs_spark.spark.realtime without a query: argument checks, and the served publisher's elements
as the Arrow record batches the JVM source reads."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from rs_spark import streams as rs
from rs_spark.spark import realtime

STRUCT = StructType([StructField("id", LongType()), StructField("t", DoubleType())])


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"publisher": rs.just(1), "endpoint": "tcp://127.0.0.1:1/x"}, {"endpoint": "a", "jvm_publisher": "b"}],
)
def test_read_stream_needs_exactly_one_publisher(kwargs):
    with pytest.raises(ValueError, match="exactly one of publisher="):
        realtime.read_stream(None, schema="id LONG", **kwargs)


def test_dicts_and_tuples_are_converted_in_chunks_and_record_batches_pass_on_their_own():
    batch = pa.record_batch([pa.array([7], pa.int64()), pa.array([0.5])], names=["id", "t"])
    plain = [{"id": 1, "t": 2.0}, (3, 4.0), *({"id": i, "t": 1.0} for i in range(10, 20))]
    pub = realtime.as_record_batches(rs.just(*plain, batch, {"id": 9, "t": 1.0}), STRUCT)
    out = rs.to_list(pub, timeout=10)
    assert all(isinstance(b, pa.RecordBatch) for b in out)
    rows = [r for b in out for r in b.to_pylist()]
    want = [{"id": 1, "t": 2.0}, {"id": 3, "t": 4.0}, *({"id": i, "t": 1.0} for i in range(10, 20))]
    assert rows == [*want, {"id": 7, "t": 0.5}, {"id": 9, "t": 1.0}]
    assert [{"id": 7, "t": 0.5}] in [b.to_pylist() for b in out], "a RecordBatch is a batch of its own"
    assert len(out) < len(rows), "plain elements share batches (not one batch per row)"


def test_a_malformed_element_fails_the_stream_naming_it():
    pub = realtime.as_record_batches(rs.just({"id": "not a number", "t": 1.0}), STRUCT)
    with pytest.raises(Exception, match="not a number"):
        rs.to_list(pub, timeout=10)


def test_a_trigger_that_is_not_one_of_the_known_kinds_is_refused():
    with pytest.raises(ValueError, match="use realTime='5 minutes'"):
        realtime.jvm_trigger(_NoJvm(), {"continuous": "1 second"})


class _NoJvm:
    """Stands in for py4j's JVMView: the refusal comes before any JVM call."""

    def __getattr__(self, name: str) -> _NoJvm:
        return self
