"""One conversion from record batches to the Subscriber's elements, for the hub and factory mode
alike; a batch without columns gives one empty element per row in every mode (the hub gave
num_rows empty tuples while factory mode gave nothing)."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

import rs_spark.spark  # noqa: F401  (registers the "rows" elements with rs_spark.delivery)
from rs_spark.delivery.elements import batch_elements
from rs_spark.delivery.queued import QueuedBatch

BATCH = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "name": pa.array(["a", "b"])})
NO_COLUMNS = pa.table({"id": [1, 2, 3]}).select([]).to_batches()[0]


def test_each_mode_gives_the_rows_in_order():
    assert batch_elements(BATCH, "dicts") == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert batch_elements(BATCH, "tuples") == [(1, "a"), (2, "b")]
    rows = batch_elements(BATCH, "rows")
    assert [r.asDict() for r in rows] == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


@pytest.mark.parametrize("mode,empty", [("dicts", {}), ("tuples", ())])
def test_a_batch_without_columns_gives_one_empty_element_per_row(mode, empty):
    assert NO_COLUMNS.num_rows == 3 and NO_COLUMNS.num_columns == 0
    assert batch_elements(NO_COLUMNS, mode) == [empty] * 3
    assert QueuedBatch(NO_COLUMNS, 0, 0, mode).rows == [empty] * 3  # the hub delivers the same


def test_an_unknown_mode_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="one of dicts, tuples, rows"):
        batch_elements(BATCH, "frames")


def test_the_delivery_layer_runs_without_pyspark_and_says_how_to_get_rows():
    """A process serving a sink with only rs_spark.delivery never imports pyspark; asking it for
    pyspark Rows says what to import instead of failing later inside a commit."""
    code = (
        "import sys\n"
        "from rs_spark.delivery import DeliveryHub, serve_sink\n"
        "from rs_spark.streams import CallbackSubscriber\n"
        "assert 'pyspark' not in sys.modules, 'rs_spark.delivery imported pyspark'\n"
        "try:\n"
        "    DeliveryHub(CallbackSubscriber(on_next=print), elements='rows')\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "elements='rows': pyspark Rows are made by rs_spark.spark: import rs_spark.spark" in r.stdout
