"""Where the source's batch server listens: loopback with a local master, the driver's address on a
cluster, never every interface. Read from real process trees and real listening sockets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pytest

from rs_spark.spark.source.single.batch_fetch import BatchServer
from rs_spark.spark.source.single.bind_address import LOOPBACK, binds_for, parse_submit_args

from .publishers import SCHEMA
from .queries import wait_for_rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = pa.table({"id": pa.array(range(10), pa.int64())})


def _listeners(pids):
    """``{(address, port)}`` of TCP sockets in LISTEN state owned by ``pids``."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    out = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                hexaddr, hexport = cols[1].split(":")
                addr = ".".join(str(int(hexaddr[i : i + 2], 16)) for i in (6, 4, 2, 0))
                out.add((addr, int(hexport, 16)))
    return out


def _python_descendants(root):
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat", "rb").read()
                children.setdefault(int(stat[stat.rindex(b")") + 2 :].split()[1]), []).append(int(d))
            except (OSError, ValueError):
                continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for c in children.get(pid, []):
            todo.append(c)
            try:
                if b"python" in open(f"/proc/{c}/cmdline", "rb").read():
                    out.append(c)
            except OSError:
                pass
    return out


def test_parse_submit_args_reads_master_and_confs_in_both_spellings():
    argv = [
        "java",
        "-cp",
        "x",
        "org.apache.spark.deploy.SparkSubmit",
        "--master",
        "spark://h:7077",
        "--conf",
        "spark.driver.host=10.1.2.3",
        "--conf=spark.app.name=a=b",
        "pyspark-shell",
    ]
    assert parse_submit_args(argv) == {
        "spark.master": "spark://h:7077",
        "spark.driver.host": "10.1.2.3",
        "spark.app.name": "a=b",
    }
    assert parse_submit_args(["--master=local[2]"]) == {"spark.master": "local[2]"}


def test_a_local_master_binds_loopback_only_whatever_the_addresses():
    assert binds_for({"spark.master": "local[2]", "spark.driver.host": "10.1.2.3"}, "10.9.9.9", "10.0.0.1") == [
        LOOPBACK
    ]


def test_a_cluster_binds_loopback_and_the_drivers_address_in_sparks_order():
    conf = {"spark.master": "spark://h:7077", "spark.driver.host": "10.1.2.3"}
    assert binds_for({**conf, "spark.driver.bindAddress": "10.4.4.4"}, "10.9.9.9", "10.0.0.1") == [LOOPBACK, "10.4.4.4"]
    assert binds_for(conf, "10.9.9.9", "10.0.0.1") == [LOOPBACK, "10.1.2.3"]
    assert binds_for({"spark.master": "yarn"}, "10.9.9.9", "10.0.0.1") == [LOOPBACK, "10.9.9.9"]
    assert binds_for({}, None, "10.0.0.1") == [LOOPBACK, "10.0.0.1"]


def test_a_wildcard_is_never_bound():
    assert binds_for({"spark.master": "yarn", "spark.driver.bindAddress": "0.0.0.0"}, None, None) == [LOOPBACK]
    with pytest.raises(ValueError, match="wildcard"):
        BatchServer(lambda k, lo, hi: (TABLE.schema, []), binds=("0.0.0.0",))


def test_driver_conf_is_read_from_the_submit_process_above_the_reader(tmp_path):
    # A real process tree: a stand-in for the driver JVM (its command line is what counts) starts
    # a child, as the JVM starts the reader process; the child reads the conf from its ancestor.
    child = (
        f"import json, sys; sys.path.insert(0, {ROOT!r}); "
        "from rs_spark.spark.source.single.bind_address import driver_conf; "
        "print(json.dumps(driver_conf()))"
    )
    parent = "import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-c', sys.argv[1]]))"
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("# comment\nspark.driver.host 10.7.7.7\nspark.master yarn\n")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            parent,
            child,
            "org.apache.spark.deploy.SparkSubmit",
            "--conf",
            "spark.master=local[3]",
            "pyspark-shell",
        ],
        env={**os.environ, "SPARK_CONF_DIR": str(conf_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(out) == {"spark.master": "local[3]", "spark.driver.host": "10.7.7.7"}  # argv wins


def test_a_server_with_two_binds_listens_on_both_on_one_port():
    s = BatchServer(lambda k, lo, hi: (TABLE.schema, []), binds=(LOOPBACK, "127.0.0.2"))
    try:
        assert _listeners([os.getpid()]) >= {(LOOPBACK, s.address.port), ("127.0.0.2", s.address.port)}
        assert s.address.hosts == []  # loopback addresses are not advertised to other hosts
    finally:
        s.close()


def test_in_local_mode_the_reader_process_listens_on_loopback_only(spark):
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()
    before = _listeners(_python_descendants(jvm_pid))
    name = "bind_" + uuid.uuid4().hex[:8]
    q = (
        spark.readStream.format("reactive")
        .schema(SCHEMA)
        .option("publisher", "tests.spark.publishers:endless")
        .option("batchTransport", "fetch")
        .option("maxRecordsPerTrigger", "1000")
        .load()
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        wait_for_rows(q)  # a fetched micro-batch ran
        new = _listeners(_python_descendants(jvm_pid)) - before
    finally:
        q.stop()
    assert new, "the reader process's batch server should be listening while the query runs"
    assert {addr for addr, _ in new} == {LOOPBACK}, f"listening beyond loopback in local mode: {new}"
