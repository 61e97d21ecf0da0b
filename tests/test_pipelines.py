"""The example Spark Declarative Pipeline (rs_spark/examples/pipelines/sensors) run with pyspark's
own ``spark-pipelines run``: a streaming table over format("reactive"), a materialized view, and an
aggregated flow (windowed, in append mode: the only mode a pipeline writes a sink in) into a
Subscriber served here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import timedelta

import pyarrow.parquet as pq
import pytest

import rs_spark

from .subscribers import Recorder

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

EXAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rs_spark", "examples", "pipelines", "sensors"
)
# pyspark 4.3.0's CLI fails AFTER a completed run of any pipeline that uses a Python data source:
# it cannot parse the Python accumulator updates the server sends with the run's last response.
KNOWN_CLI_BUG = "[UNKNOWN_RESPONSE] Unknown response: Plan observed(__python_accumulator__"


def _cli() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "spark-pipelines")
    if os.path.exists(here):
        return here
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-pipelines")


def test_declarative_pipeline_reads_a_publisher_into_a_streaming_table_a_view_and_a_subscriber(tmp_path):
    """1500 readings: six bursts of 250, 10 ms apart on the feed's clock. The sink's flow counts them per sensor and
    10 ms window, with a watermark at the latest reading: the first five windows close and each goes to the
    Subscriber once, whole; the sixth stays open."""
    work = tmp_path / "sensors"
    shutil.copytree(EXAMPLE, work)
    rec = Recorder()
    ep = rs_spark.serve_sink(rec)
    try:
        spec = (work / "spark-pipeline.yml").read_text()
        lines = [f"storage: file://{tmp_path}/storage" if ln.startswith("storage:") else ln for ln in spec.splitlines()]
        (work / "spark-pipeline.yml").write_text("\n".join(lines).replace('"2000"', '"1500"') + "\n")
        env = dict(
            os.environ,
            PYSPARK_PYTHON=sys.executable,
            PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
            RS_SPARK_SENSORS_MEANS=ep.address,
        )
        r = subprocess.run([_cli(), "run"], cwd=str(work), env=env, capture_output=True, text=True, timeout=500)
        out = r.stdout + r.stderr
        assert "Flow spark_catalog.default.readings has COMPLETED" in out, out[-4000:]
        assert "Flow spark_catalog.default.sensor_stats has COMPLETED" in out, out[-4000:]
        assert "Flow per_window has COMPLETED" in out, out[-4000:]
        assert "Run is COMPLETED" in out, out[-4000:]
        if r.returncode != 0:  # only the known CLI bug may follow a completed run
            assert KNOWN_CLI_BUG in out, out[-4000:]
        ep.finish()
        assert rec.wait_done(30).completed, rec.error
    finally:
        ep.stop()
    readings = pq.read_table(str(work / "spark-warehouse" / "readings"))
    seqs = readings.column("seq").to_pylist()
    assert len(seqs) == 1500 and sorted(seqs) == list(range(1500))
    stats = pq.read_table(str(work / "spark-warehouse" / "sensor_stats"))
    assert stats.num_rows == 8 and sum(stats.column("readings").to_pylist()) == 1500
    keys = [(r["window_start"], r["sensor"]) for r in rec.items]
    assert len(keys) == len(set(keys)), "a window's row reached the Subscriber twice"
    per_window: dict = {}
    for r in rec.items:
        per_window[r["window_start"]] = per_window.get(r["window_start"], 0) + r["readings"]
    starts = sorted(per_window)
    assert [s - starts[0] for s in starts] == [timedelta(milliseconds=10 * i) for i in range(5)], starts
    assert list(per_window.values()) == [250] * 5
