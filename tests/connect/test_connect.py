"""Source and sink from a Spark Connect client, against a real local Connect server started
here (pyspark's SparkConnectServer through spark-submit). Each scenario runs in its own client
process (tests/connect/client.py): a remote session switches a whole process to Connect mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ..ports import free_port, listening
from ..waits import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    base = tmp_path_factory.mktemp("connect")
    port = free_port()
    # The server's Python workers run this interpreter and import the tests' factories.
    env = dict(
        os.environ,
        SPARK_HOME=home,
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
    )
    cmd = [
        os.path.join(home, "bin", "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        f"spark.sql.warehouse.dir={base / 'warehouse'}",
        "spark-internal",
    ]
    log = open(base / "server.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(base))
    try:
        wait_until(
            lambda: listening(port, proc, "the Connect server", base / "server.log"),
            f"the Connect server to listen on 127.0.0.1:{port}",
            120,
            interval=0.2,
        )
    except BaseException:
        proc.kill()
        log.close()
        raise
    yield f"sc://127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def run(scenario: str, url: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests", "connect", "client.py"), scenario, url],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        cwd=ROOT,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, (
        f"client {scenario} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    )
    return json.loads(lines[-1][len("RESULT ") :])


def test_factory_mode_read_over_connect_delivers_every_record_once(connect_url):
    assert run("factory_read", connect_url) == {"rows": [3000, 3000, 0, 2999]}


def test_endpoint_mode_read_of_a_publisher_served_by_the_client(connect_url):
    assert run("endpoint_read", connect_url) == {"rows": [500, 500, 0, 499]}


def test_read_stream_helper_serves_the_client_publisher(connect_url):
    assert run("read_stream_helper", connect_url) == {"rows": [300, 300, 0, 299]}


def test_the_type_matrix_over_connect_gives_what_connects_create_dataframe_and_collect_give(connect_url):
    assert run("types_matrix", connect_url) == {"read_stream": True, "rows": True, "dicts": True}


def test_batch_read_over_connect(connect_url):
    assert run("batch_read", connect_url) == {"rows": [700, 700]}


def test_write_stream_into_a_client_subscriber_in_order_then_on_complete(connect_url):
    r = run("write_stream_helper", connect_url)
    assert r == {"seqs_in_order": True, "count": 1200, "completed": True, "errors": [], "query_error": None}


def test_write_stream_in_update_mode_into_a_client_subscriber(connect_url):
    # Three micro-batches of 400 rows, each updating the three keys' counts: 9 rows, the last of each key 400.
    r = run("write_stream_update", connect_url)
    assert r == {
        "final": [[0, 400], [1, 400], [2, 400]],
        "count": 9,
        "completed": True,
        "errors": [],
        "query_error": None,
    }


def test_sink_state_is_found_from_a_handle_the_connect_client_got_from_spark_streams_get(connect_url):
    r = run("sink_state_from_any_handle", connect_url)
    assert r == {"same_hub": True, "run_id": True, "delivered": 2000, "completed": True, "after_end": 2000}


def test_subscriber_factory_mode_sink_runs_on_the_server(connect_url):
    assert run("factory_sink", connect_url) == {"rows": [250, 250, 0, 249]}


def test_driver_jvm_helpers_say_they_need_a_classic_session_and_what_to_use_instead(connect_url):
    err = run("jvm_helper_refused", connect_url)["error"]
    assert err.startswith("ShimNotFound") and "Spark Connect" in err and "jvmPublisher" in err


def test_loopback_endpoint_for_a_remote_connect_server_is_refused_with_the_fix(connect_url):
    err = run("unreachable_bind_refused", connect_url)["error"]
    assert "10.1.2.3" in err and "bind='tcp://" in err
