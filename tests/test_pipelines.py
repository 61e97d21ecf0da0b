"""The example Spark Declarative Pipeline (rs_spark/examples/pipelines/sensors) run with pyspark's
own ``spark-pipelines run``: a streaming table over format("reactive") and a materialized view."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

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


def test_declarative_pipeline_reads_a_publisher_into_a_streaming_table_and_a_view(tmp_path):
    work = tmp_path / "sensors"
    shutil.copytree(EXAMPLE, work)
    spec = (work / "spark-pipeline.yml").read_text()
    lines = [f"storage: file://{tmp_path}/storage" if ln.startswith("storage:") else ln for ln in spec.splitlines()]
    (work / "spark-pipeline.yml").write_text("\n".join(lines).replace('"2000"', '"1500"') + "\n")
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    )
    r = subprocess.run([_cli(), "run"], cwd=str(work), env=env, capture_output=True, text=True, timeout=500)
    out = r.stdout + r.stderr
    assert "Flow spark_catalog.default.readings has COMPLETED" in out, out[-4000:]
    assert "Flow spark_catalog.default.sensor_stats has COMPLETED" in out, out[-4000:]
    assert "Run is COMPLETED" in out, out[-4000:]
    if r.returncode != 0:  # only the known CLI bug may follow a completed run
        assert KNOWN_CLI_BUG in out, out[-4000:]
    readings = pq.read_table(str(work / "spark-warehouse" / "readings"))
    seqs = readings.column("seq").to_pylist()
    assert len(seqs) == 1500 and sorted(seqs) == list(range(1500))
    stats = pq.read_table(str(work / "spark-warehouse" / "sensor_stats"))
    assert stats.num_rows == 8 and sum(stats.column("readings").to_pylist()) == 1500
