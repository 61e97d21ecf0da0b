"""A Spark Connect client process for tests/connect: ``python client.py SCENARIO sc://HOST:PORT``.

Runs in its own process because ``SparkSession.builder.remote(...)`` switches the whole
process to Connect mode (``SPARK_CONNECT_MODE_ENABLED``), which must not leak into the other
test modules' classic sessions. Prints one line ``RESULT <json>``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import warnings

warnings.filterwarnings("ignore", category=FutureWarning)


def _memory(spark, df, name):
    q = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    q.awaitTermination(180)
    exc = q.exception()
    if exc is not None:
        return {"error": str(exc)}
    return {
        "rows": [
            list(r)
            for r in spark.sql(f"select count(*), count(distinct seq), min(seq), max(seq) from {name}").collect()
        ][0]
    }


def factory_read(spark):
    df = (
        spark.readStream.format("reactive")
        .schema("sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG")
        .option("publisher", "rs_spark.examples.sensors:readings")
        .option("publisher.total", 3000)
        .option("publisher.rate", 100000)
        .option("maxRecordsPerTrigger", 1000)
        .load()
    )
    return _memory(spark, df, "factory_read")


def endpoint_read(spark):
    from rs_spark import net
    from rs_spark import streams as rs

    server = net.serve(rs.range_(500).pipe(rs.map(lambda i: {"seq": i})), name="nums")
    try:
        df = spark.readStream.format("reactive").schema("seq LONG").option("endpoint", server.address).load()
        return _memory(spark, df, "endpoint_read")
    finally:
        server.stop()


def read_stream_helper(spark):
    import rs_spark
    from rs_spark import streams as rs

    df = rs_spark.read_stream(
        spark,
        rs.range_(300).pipe(rs.map(lambda i: {"seq": i})),
        schema="seq LONG",
        options={"maxRecordsPerTrigger": 100},
    )
    return _memory(spark, df, "read_stream_helper")


def types_matrix(spark):
    """The type matrix over Connect (tests/spark/type_rows.py: every type, VARIANT too, with edge values):
    read_stream (converted in this client) and the sink's rows and dicts (made by the hub in this client)
    against what Connect's own createDataFrame(rows).collect() makes of the same rows, here."""
    import rs_spark
    from rs_spark import streams as rs
    from tests.spark import type_rows
    from tests.subscribers import Recorder

    canon = type_rows.canon
    collected = spark.createDataFrame(type_rows.rows(), type_rows.SCHEMA).collect()
    want = {
        "read_stream": sorted(canon(r) for r in collected),
        "rows": sorted(canon(r) for r in collected),
        "dicts": sorted(canon(r.asDict(recursive=True)) for r in collected),
    }
    out = {}
    df = rs_spark.read_stream(spark, rs.from_iterable(type_rows.dict_rows()), schema=type_rows.SCHEMA)
    q = df.writeStream.format("memory").queryName("types_matrix").trigger(availableNow=True).start()
    q.awaitTermination(180)
    got = (
        sorted(canon(r) for r in spark.table("types_matrix").collect())
        if q.exception() is None
        else [str(q.exception())]
    )
    out["read_stream"] = True if got == want["read_stream"] else {"got": got, "want": want["read_stream"]}
    for elements in ("rows", "dicts"):
        r = Recorder()
        src = rs_spark.read_stream(spark, rs.from_iterable(type_rows.dict_rows()), schema=type_rows.SCHEMA)
        ck = tempfile.mkdtemp(prefix="rs-connect-ck-")
        q = rs_spark.write_stream(src, r, checkpoint=ck, trigger={"availableNow": True}, elements=elements)
        q.awaitTermination(180)
        r.wait_done()
        got = sorted(canon(x) for x in r.items) if r.completed else [repr(r.error)]
        out[elements] = True if got == want[elements] else {"got": got, "want": want[elements]}
    return out


def batch_read(spark):
    df = (
        spark.read.format("reactive")
        .schema("sensor STRING, ts TIMESTAMP, temperature DOUBLE, seq LONG")
        .option("publisher", "rs_spark.examples.sensors:readings")
        .option("publisher.total", 700)
        .option("publisher.rate", 100000)
        .load()
    )
    return {"rows": [df.count(), df.select("seq").distinct().count()]}


def write_stream_helper(spark):
    import rs_spark
    from rs_spark import streams as rs

    # A query earlier in the session (the case where we once saw the Connect listener bus miss
    # the next query's end event; see rs_spark/spark/query_end.py).
    spark.readStream.format("rate").load().writeStream.format("memory").queryName("warmup").trigger(
        availableNow=True
    ).start().awaitTermination(120)
    got, ended, errors = [], threading.Event(), []
    sub = rs.CallbackSubscriber(
        lambda r: got.append(r["seq"]),
        on_complete=ended.set,
        on_error=lambda e: (errors.append(repr(e)), ended.set()),
        request_size=64,
    )
    # Source and sink both live in this client process: the server connects back to each.
    src = rs_spark.read_stream(
        spark,
        rs.range_(1200).pipe(rs.map(lambda i: {"seq": i})),
        schema="seq LONG",
        options={"maxRecordsPerTrigger": 400},
    )
    q = rs_spark.write_stream(
        src,
        sub,
        checkpoint=tempfile.mkdtemp(prefix="rs-connect-ck-"),
        trigger={"availableNow": True},
        query_name="connect_sink",
    )
    q.awaitTermination(180)
    return {
        "seqs_in_order": got == list(range(1200)),
        "count": len(got),
        "completed": ended.wait(60),
        "errors": errors,
        "query_error": None if q.exception() is None else str(q.exception()),
    }


def write_stream_update(spark):
    """A grouped count in update mode into a client Subscriber: foreachBatch, whose function Spark Connect runs in
    a Python worker of the server, which sends each micro-batch back to the hub in this client process."""
    import rs_spark
    from rs_spark import streams as rs

    got, ended, errors = [], threading.Event(), []
    sub = rs.CallbackSubscriber(
        lambda r: got.append([r["key"], r["count"]]),
        on_complete=ended.set,
        on_error=lambda e: (errors.append(repr(e)), ended.set()),
        request_size=64,
    )
    src = rs_spark.read_stream(
        spark,
        rs.range_(1200).pipe(rs.map(lambda i: {"seq": i, "key": i % 3})),
        schema="seq LONG, key LONG",
        options={"maxRecordsPerTrigger": 400},
    )
    q = rs_spark.write_stream(
        src.groupBy("key").count(),
        sub,
        checkpoint=tempfile.mkdtemp(prefix="rs-connect-ck-"),
        trigger={"availableNow": True},
        output_mode="update",
    )
    q.awaitTermination(180)
    return {
        "final": sorted({k: c for k, c in got}.items()),
        "count": len(got),
        "completed": ended.wait(60),
        "errors": errors,
        "query_error": None if q.exception() is None else str(q.exception()),
    }


def sink_state_from_any_handle(spark):
    import rs_spark
    from rs_spark import streams as rs

    got, ended = [], threading.Event()
    sub = rs.CallbackSubscriber(got.append, on_complete=ended.set, on_error=lambda e: ended.set(), request_size=64)
    src = rs_spark.read_stream(
        spark,
        rs.range_(2000).pipe(rs.map(lambda i: {"seq": i})),
        schema="seq LONG",
        options={"maxRecordsPerTrigger": 500},
    )
    q = rs_spark.write_stream(
        src, sub, checkpoint=tempfile.mkdtemp(prefix="rs-connect-ck-"), trigger={"processingTime": "200 milliseconds"}
    )
    from tests.waits import wait_until

    wait_until(lambda: len(got) >= 2000 or not q.isActive, "2000 rows", 180, interval=0.1)
    handle = spark.streams.get(q.id)  # another handle of the running query, from the server
    state = rs_spark.sink_state(handle)
    running = {
        "same_hub": state.hub is rs_spark.sink_state(q).hub,
        "run_id": state.run_id == str(handle.runId),
        "delivered": state.stats().delivered,
    }
    q.stop()
    return {**running, "completed": ended.wait(60), "after_end": rs_spark.sink_state(q.id).stats().delivered}


def factory_sink(spark):
    # Subscriber factory mode: the Subscriber is built per task on the server's executors.
    out = tempfile.mkdtemp(prefix="rs-connect-sink-")
    df = spark.range(0, 250).withColumnRenamed("id", "seq")
    df.write.format("reactive").option("subscriber", "tests.connect.subscribers:to_file").option(
        "subscriber.dir", out
    ).mode("append").save()
    import glob

    lines = [int(x) for p in glob.glob(out + "/*.txt") for x in open(p).read().split()]
    return {"rows": [len(lines), len(set(lines)), min(lines), max(lines)]}


def jvm_helper_refused(spark):
    from rs_spark.spark.jvm import jvm

    try:
        jvm(spark)
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return {"error": None}


def unreachable_bind_refused(spark):
    # The server is on loopback here; pretend it is elsewhere to see the up-front refusal.
    import rs_spark
    from rs_spark import streams as rs

    type(spark.client).host = property(lambda self: "10.1.2.3")
    try:
        rs_spark.read_stream(spark, rs.range_(3), schema="value LONG")
    except ValueError as e:
        return {"error": str(e)}
    return {"error": None}


def main() -> None:
    scenario, url = sys.argv[1], sys.argv[2]
    from pyspark.sql import SparkSession

    from rs_spark.spark import register

    spark = SparkSession.builder.remote(url).getOrCreate()
    register(spark)
    try:
        result = globals()[scenario](spark)
    finally:
        try:
            spark.stop()
        except Exception:
            pass
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
