"""``read_stream``: a streaming DataFrame over a Publisher that lives in this (notebook) process.

Spark never runs a data source in the user's process (its reader lives in a separate Python
process on the driver), so the Publisher is served on a loopback endpoint
(:func:`rs_spark.net.serve`) and the source reaches it with option ``endpoint``. The endpoint
lives until :func:`stop_served` is called or this process exits.
"""

from __future__ import annotations

import ssl as _ssl
import uuid
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ...net.protocol.address import parse
from ...net.protocol.tls_files import TLS_OPTIONS
from ...net.zero_loss.retention import Retention
from ...streams.types import Publisher
from ..options import OptionValue
from ..served import keep, served, stop_served
from ..session import check_reachable, is_local
from .options import PARTITION_ID, SourceOptions


def read_stream(
    spark: SparkSession,
    publisher: Publisher[Any] | Mapping[str, Publisher[Any]],
    schema: str | StructType | None = None,
    *,
    options: Mapping[str, OptionValue] | None = None,
    bind: str = "tcp://127.0.0.1:0",
    retention: Retention | None = None,
    codec: str = "arrow",
    ssl: _ssl.SSLContext | None = None,
) -> DataFrame:
    """Serve ``publisher`` on ``bind`` and return ``spark.readStream.format("reactive")`` over it.

    ``publisher`` may also be a mapping of partition ids to Publishers (``{"eu": pub1, "us": pub2}``):
    each is a partition with its own position, read by executors straight from this process.

    ``schema``: DDL string or StructType (else the publisher's ``schema`` attribute, see
    :func:`rs_spark.arrow.with_schema`). ``options``: the source's options, e.g.
    ``{"maxRecordsPerTrigger": 1000}``, checked here by the source's parser (a bad value raises
    ``OptionError`` now; the TLS options' files are read where the reader runs). ``codec``: how
    elements cross. ``arrow`` (the default): dicts, tuples, Rows, dataclasses or RecordBatches are
    converted here, in this process's time zone, with pyspark's rules (docs/types.md), in chunks
    sized by demand; option ``mode`` applies here.
    ``json``: elements cross as JSON text and are converted in Spark's reader (an earlier release's way).
    ``bind``: where Spark's reader connects back to this process; the default (loopback)
    serves a driver on this machine. For a Spark Connect server elsewhere, bind an address of
    this machine that the server can reach (``tcp://10.0.0.5:0``); a random token protects it.
    ``retention`` (:class:`rs_spark.net.Retention`): what the endpoint keeps until Spark commits, so
    a query restarted from its checkpoint continues without loss (on by default, within bounds).
    ``ssl``: a server ``ssl.SSLContext`` to serve on ``tls://`` (give option ``tlsCaFile`` too, unless
    the system's trust store trusts its certificate).
    """
    from ..session import register

    spark_opts = dict(options or {})
    publishers = _by_partition(publisher)
    declared = _declared_schema(schema, next(iter(publishers.values())))
    check_reachable(spark, bind, "read_stream")
    if len(publishers) > 1:
        _check_executors_reach(spark, bind)
    given = {k: str(v) for k, v in spark_opts.items()}  # what the reader gets: reader.option() takes text
    server, token, names = _server(publishers, bind, retention, ssl)
    try:
        addresses = {pid: _address(server, name, token, codec) for pid, name in names.items()}
        endpoint = ",".join(f"{pid}={a}" for pid, a in addresses.items()) if len(addresses) > 1 else addresses["0"]
        opts = _parsed(given, endpoint)
        if codec == "arrow":
            publishers = _as_arrow(spark, publishers, declared, opts, retention)
        for pid, pub in publishers.items():
            server.add_publisher(names[pid], pub)
    except BaseException:
        server.stop()
        raise
    keep(server)
    register(spark)
    reader = spark.readStream.format("reactive").schema(declared).option("endpoint", endpoint)
    for k, v in given.items():
        reader = reader.option(k, v)
    return reader.load()


def _by_partition(publisher: Any) -> dict[str, Any]:
    """One Publisher, or a mapping of partition ids to Publishers (each read by executors)."""
    pubs = dict(publisher) if isinstance(publisher, Mapping) else {"0": publisher}
    if not pubs:
        raise ValueError("read_stream() needs a Publisher, or a mapping of partition ids to Publishers; got none")
    for pid, p in pubs.items():
        if p is None or not callable(getattr(p, "subscribe", None)):
            raise TypeError(
                f"read_stream() needs a Publisher, got {p!r}" + (f" for partition {pid!r}" if len(pubs) > 1 else "")
            )
        if not isinstance(pid, str) or not PARTITION_ID.fullmatch(pid):
            raise ValueError(
                f"read_stream(): partition id {pid!r} must be 1-64 letters, digits, '.', '_' or '-' (it names the "
                "partition in option endpoint, as id=address, and in the checkpoint's offsets)"
            )
    return pubs


def _parsed(given: dict[str, str], endpoint: str) -> SourceOptions:
    """The options as format("reactive") parses them for this endpoint (the one parser: a bad value fails
    here, now, with the reader's words). The TLS options are left to the reader: their files are read
    where it runs (on Spark Connect, the server), which may not be this machine."""
    tls = {k.lower() for k in TLS_OPTIONS}
    return SourceOptions.parse({**{k: v for k, v in given.items() if k.lower() not in tls}, "endpoint": endpoint})


def _as_arrow(
    spark: Any, publishers: dict[str, Any], declared: Any, opts: SourceOptions, retention: Retention | None
) -> dict[str, Any]:
    """Each Publisher's elements as record batches of the declared schema, converted in this process, in
    chunks of :func:`rs_spark.arrow.chunking.chunk_rows` (this reader holds a batch whole)."""
    from ...arrow.chunking import chunk_rows
    from ..values import served_batches

    size = chunk_rows((retention or Retention()).max_records, opts.max_buffered)
    struct = declared if isinstance(declared, StructType) else spark.createDataFrame([], declared).schema
    return {pid: served_batches(pub, struct, opts.mode, opts.corrupt_column, size) for pid, pub in publishers.items()}


def _check_executors_reach(spark: Any, bind: str) -> None:
    """Several publishers are fetched by executors: on a cluster they must reach ``bind``."""
    if is_local(spark) or not parse(bind, need_name=False).is_loopback:
        return
    raise ValueError(
        f"read_stream() with several publishers serves them for Spark's executors to fetch from, and {bind} is "
        "loopback, which executors on other hosts cannot reach; pass bind='tcp://<an address of this machine the "
        "executors reach>:0' (a token is added)"
    )


def _declared_schema(schema: Any, publisher: Any) -> Any:
    declared = schema if schema is not None else getattr(publisher, "schema", None)
    if declared is None:
        raise ValueError(
            "read_stream() needs schema= (DDL or StructType) or a publisher with a `schema` "
            "attribute (rs_spark.arrow.with_schema)"
        )
    if not isinstance(declared, str) and type(declared).__module__.startswith("pyarrow"):
        from pyspark.sql.pandas.types import from_arrow_schema

        declared = from_arrow_schema(declared)
    return declared


def _server(
    publishers: dict[str, Any], bind: str, retention: Retention | None, ssl: _ssl.SSLContext | None
) -> tuple[Any, str, dict[str, str]]:
    """One server for every partition's Publisher (added by the caller), with a random token (even on
    loopback: any local user can connect to 127.0.0.1, the port is in /proc/net/tcp); TLS with ``ssl``."""
    import secrets

    from ...net import Server

    token = secrets.token_urlsafe(24)
    server = Server(bind, token=token, retention=retention, ssl=ssl)
    prefix = f"rs-{uuid.uuid4().hex[:12]}"
    return server, token, {pid: f"{prefix}-{pid}" for pid in publishers}


def _address(server: Any, name: str, token: str, codec: str) -> str:
    return (
        parse(server.address_of(name))
        .with_token(token)
        .with_codec(codec if codec != "json" else None)
        .format(with_token=True)
    )


__all__ = ["read_stream", "stop_served", "served"]
