"""Typed use of rs_spark's public entry points: tests/test_lint.py has mypy check this file (it is
never run). A change that breaks a documented call, or hides a parameter behind ``Any``, fails there."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

import rs_spark
from rs_spark import net, tck
from rs_spark import streams as rs
from rs_spark.delivery import SinkEndpoint
from rs_spark.net import Retention
from rs_spark.spark import realtime


def read(spark: SparkSession) -> DataFrame:
    df: DataFrame = rs_spark.read_stream(
        spark, rs.range_(10), "value LONG", options={"maxRecordsPerTrigger": 100, "prefetch": True}
    )
    rs_spark.read_stream(spark, {"eu": rs.range_(5), "us": rs.range_(5)}, schema="value LONG", bind="tcp://127.0.0.1:0")
    rs_spark.read_stream(spark, rs.range_(5), "value LONG", retention=Retention(), codec="arrow")
    return df


def write(df: DataFrame, sub: rs.Subscriber[Any]) -> StreamingQuery:
    q: StreamingQuery = rs_spark.write_stream(
        df, sub, options={"commitTimeout": "30s"}, elements="batches", trigger={"processingTime": "1 second"}
    )
    rs_spark.write_stream(df, "tcp://127.0.0.1:7000/sink", checkpoint="/tmp/chk", end_on_stop=False)
    return q


def serve(sub: rs.Subscriber[Any]) -> str:
    endpoint: SinkEndpoint = rs_spark.serve_sink(sub, elements="rows", ledger="/tmp/ledger")
    return endpoint.address


def real_time(spark: SparkSession, sub: rs.Subscriber[Any]) -> StreamingQuery:
    schema = pa.schema([("id", pa.int64())])
    df: DataFrame = realtime.read_stream(spark, rs.range_(5), schema, options={"maxInFlight": 16})
    realtime.read_stream(spark, endpoint="tcp://127.0.0.1:7000/x", schema="id LONG", options={"resumeWindow": "10min"})
    return realtime.write_stream(df, sub, options={"ackTimeout": "10min"}, trigger="5 minutes")


def server_stats(server: net.Server) -> tuple[int, str, float]:
    stats: net.ServerStats = server.stats()
    stream: net.StreamStats = stats.streams[0]
    return stats.lost_records + stats.connections, stream.state, stream.window


def resumable(address: str) -> net.ResumablePublisher:
    pub: net.RemotePublisher[net.ResumablePublisher] = net.connect(address, codec="arrow")
    return pub.resumable(None, window=60.0, reconnect_for=30.0, positions=True, new=False, backoff=None)


class _PinnedVerification(tck.PublisherVerification):
    skips = {"1.11": "one subscriber", "test_optional_spec104_must_signal_on_error_when_fails": "no failed publisher"}

    def create_publisher(self, elements: int) -> rs.Publisher[int]:
        return rs.from_iterable(iter(range(elements)))


def untested(verification: tck.PublisherVerification) -> list[tuple[str, str]]:
    rules: list[tck.UntestedRule] = tck.untested_rules(verification)
    results: dict[str, tuple[str, str]] = tck.run(_PinnedVerification())
    return [(u.rule, u.why) for u in rules] + list(results.values())
