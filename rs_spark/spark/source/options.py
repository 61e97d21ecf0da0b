"""Options of the ``reactive`` source (``spark.readStream.format("reactive")``), parsed in one place."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from ...arrow.convert import DEFAULT_CORRUPT_COLUMN, Mode
from ...net.protocol.address import redact, redact_endpoints, split_endpoint
from ...net.protocol.tls_files import TLS_OPTIONS, TlsFiles
from ..durations import parse_duration
from ..link_options import EndpointLink
from ..options import (
    PASS_THROUGH_PREFIX,
    OptionError,
    check_known,
    factory_options,
    lookup,
    parse_bool,
    parse_choice,
    parse_int,
    parse_tls,
    redacted_repr,
)

SOURCE_OPTIONS: dict[str, str] = {
    "publisher": "package.module:factory called with its options (publisher.NAME as NAME); returns a Publisher",
    "endpoint": "an rs_spark.net address of a served Publisher; several, comma-separated (id=address names a "
    "partition; else its endpoint name does), are partitions read by executors",
    "jvmPublisher": "a JVM Publisher: com.example.Feeds#method (public static, no argument or a Map<String, String> "
    "of the options) or a Publisher class; built in a JVM the reader process starts",
    "jvmJars": "with jvmPublisher: comma-separated jar paths or globs for that JVM's classpath",
    "token": "authentication token for the endpoint",
    **TLS_OPTIONS,
    "executorFetch": "executors fetch each micro-batch's rows straight from the endpoints, the reader process "
    "handles only demand, positions and acknowledgements (default: true with several endpoints, false with one)",
    "minPartitions": "with executorFetch: at least this many Spark partitions per micro-batch, a busy partition's "
    "range split over several tasks (default: one per endpoint)",
    "resumable": "with endpoint: read it as a resumable stream, so the serving side keeps what it sent until "
    "Spark commits and a restarted query continues without loss (default true)",
    "resumeWindow": "with endpoint: how long the serving side keeps the stream for a restarted query after the "
    "connection drops, at most the endpoint's Retention.window (default: the endpoint's window, 10 minutes)",
    "keepaliveInterval": "with endpoint: how often the reader's connection sends KEEPALIVE (default 2s)",
    "keepaliveTimeout": "with endpoint: how long a silent connection lives before it is taken as lost and resumed "
    "(default 10s)",
    "reconnectBackoff": "with endpoint: the first pause between tries to resume a lost connection, doubled each "
    "try, with jitter (as Kafka's reconnect.backoff.ms) (default 100ms)",
    "reconnectBackoffMax": "with endpoint: the longest pause between tries to resume (as Kafka's "
    "reconnect.backoff.max.ms); tries go on for as long as the endpoint keeps the stream (default 10s)",
    "schema": "DDL schema when none is given with .schema() and the publisher declares none",
    "maxRecordsPerTrigger": "at most this many records per micro-batch (ReadMaxRows)",
    "minRecordsPerTrigger": "wait for at least this many records per micro-batch (ReadMinRows)",
    "maxTriggerDelay": "with minRecordsPerTrigger: run a smaller batch after this long (default 15m)",
    "pollTimeout": "how long latestOffset waits for requested elements (default 500ms)",
    "availableNowMaxRecords": "with Trigger.AvailableNow: the most records one run reads from a publisher (per "
    "partition) that never falls short of what is asked, such as an endless generator (default 1000000)",
    "maxBufferedRecords": "bound on records (rows) held in memory: buffered plus requested (default 100000)",
    "prefetch": "request the next micro-batch's elements while Spark runs this one (default true)",
    "logPath": "pyarrow filesystem URI of the replay log (local path, s3://, hdfs://, gs://, abfs://)",
    "failOnDataLoss": "fail the query when planned elements cannot be replayed (default true)",
    "numPartitions": "split each micro-batch into this many partitions (default 1)",
    "batchTransport": "without logPath, how executors get a micro-batch's rows: auto (default: small ones inside "
    "the partition, large ones fetched from the driver-side reader process over TCP), inline "
    "or fetch",
    "mode": "FAILFAST (default), PERMISSIVE or DROPMALFORMED",
    "columnNameOfCorruptRecord": f"PERMISSIVE mode's text column (default {DEFAULT_CORRUPT_COLUMN})",
    "path": "ignored (Spark passes it for .load(path))",
}


@dataclasses.dataclass(frozen=True, repr=False)
class SourceOptions:
    """The ``reactive`` source's options, parsed and validated."""

    publisher: str | None
    endpoint: str | None
    token: str | None
    schema: str | None
    max_records_per_trigger: int | None
    min_records_per_trigger: int | None
    max_trigger_delay: float
    poll_timeout: float
    max_buffered: int
    prefetch: bool
    available_now_max_records: int
    log_path: str | None
    fail_on_data_loss: bool
    num_partitions: int
    batch_transport: str
    mode: Mode
    corrupt_column: str
    raw: dict[str, Any]
    jvm_publisher: str | None = None
    jvm_jars: str | None = None
    resumable: bool = True
    resume_window: float | None = None
    endpoints: dict[str, str] = dataclasses.field(default_factory=dict)
    executor_fetch: bool = False
    min_partitions: int | None = None
    factory: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The options for the ``publisher`` / ``jvmPublisher`` factory: ``publisher.*``, prefix stripped."""
    tls: TlsFiles | None = None
    """Options tlsCaFile, tlsCertFile, tlsKeyFile, tlsHostname: how a tls:// endpoint is trusted."""
    link: EndpointLink = dataclasses.field(default_factory=lambda: EndpointLink())
    """Options keepaliveInterval, keepaliveTimeout, reconnectBackoff, reconnectBackoffMax."""

    def __repr__(self) -> str:  # the token, and any address holding one, redacted
        return redacted_repr(self)

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> SourceOptions:
        """Parse and check Spark's options (keys in any case); an unknown or unusable one raises
        ``OptionError`` naming it and the fix."""
        check_known(options, SOURCE_OPTIONS, "format('reactive') (source)")
        o = lookup(options)
        publisher, endpoint, jvm_publisher = _the_publisher(o)
        max_r, min_r, max_buffered = _record_bounds(o)
        try:
            mode = Mode.parse(o.get("mode", "FAILFAST"))
        except ValueError as exc:  # its words, as an OptionError like every other option's
            raise OptionError(str(exc)) from None
        endpoints = parse_endpoints(endpoint) if endpoint else {}
        executor_fetch = _executor_fetch(o, endpoints)
        return cls(
            publisher=publisher,
            endpoint=endpoint,
            token=o.get("token"),
            schema=o.get("schema"),
            max_records_per_trigger=max_r,
            min_records_per_trigger=min_r,
            max_trigger_delay=parse_duration("maxTriggerDelay", o.get("maxtriggerdelay", "15m")),
            poll_timeout=parse_duration("pollTimeout", o.get("polltimeout", "500ms")),
            max_buffered=max_buffered,
            prefetch=parse_bool("prefetch", o.get("prefetch", "true")),
            available_now_max_records=parse_int(
                "availableNowMaxRecords", o.get("availablenowmaxrecords", 1_000_000), 1
            ),
            log_path=o.get("logpath") or None,
            fail_on_data_loss=parse_bool("failOnDataLoss", o.get("failondataloss", "true")),
            num_partitions=parse_int("numPartitions", o.get("numpartitions", 1), 1),
            batch_transport=parse_choice(
                "batchTransport", o.get("batchtransport", "auto"), ("auto", "inline", "fetch")
            ),
            mode=mode,
            corrupt_column=str(o.get("columnnameofcorruptrecord", DEFAULT_CORRUPT_COLUMN)),
            raw=o,
            jvm_publisher=jvm_publisher,
            jvm_jars=str(o["jvmjars"]) if o.get("jvmjars") else None,
            resumable=parse_bool("resumable", o.get("resumable", "true")),
            endpoints=endpoints,
            executor_fetch=executor_fetch,
            min_partitions=parse_int("minPartitions", o["minpartitions"], 1) if "minpartitions" in o else None,
            resume_window=parse_duration("resumeWindow", o["resumewindow"]) if o.get("resumewindow") else None,
            factory=factory_options(options, PASS_THROUGH_PREFIX),
            tls=parse_tls(o, endpoints.values(), None if endpoint else "publisher" if publisher else "jvmPublisher"),
            link=EndpointLink.parse(o),
        )

    def json_elements(self, pid: str | None = None) -> bool:
        """Whether the elements of endpoint ``pid`` (the only one by default) are JSON values: its
        address asks for codec json, or for none (the client's default). Their stand-ins for DECIMAL and
        BINARY are then read as Spark's ``from_json`` reads them (docs/types.md)."""
        from ...net.protocol.address import parse

        if not self.endpoints:
            return False  # a factory's or a JVM publisher's elements are Python values or Arrow
        address = self.endpoints[pid] if pid is not None else next(iter(self.endpoints.values()))
        return (parse(address).codec or "json") == "json"

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``rs_spark.net.connect`` for this query's endpoints."""
        return self.link.client_options(self.token, self.tls)


def _the_publisher(o: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """``(publisher, endpoint, jvmPublisher)``: exactly one is set, in its form."""
    publisher, endpoint, jvm_publisher = o.get("publisher"), o.get("endpoint"), o.get("jvmpublisher")
    if sum(map(bool, (publisher, endpoint, jvm_publisher))) != 1:
        raise OptionError(
            "format('reactive') needs exactly one of option 'publisher' (\"package.module:factory\", "
            "called in the driver-side reader process), option 'endpoint' (an rs_spark.net address) or option "
            "'jvmPublisher' (\"com.example.Feeds#method\", a JVM Publisher factory); "
            f"got publisher={publisher!r}, endpoint={_shown(endpoint)}, jvmPublisher={jvm_publisher!r}. From a "
            "notebook, rs_spark.read_stream(spark, publisher, schema=...) sets this up for an in-memory Publisher."
        )
    if o.get("jvmjars") and not jvm_publisher:
        raise OptionError(
            f"option jvmJars={o.get('jvmjars')!r} is only used with option jvmPublisher; set "
            "jvmPublisher to the JVM Publisher factory (com.example.Feeds#method) or drop jvmJars"
        )
    if jvm_publisher and (":" in str(jvm_publisher).split("#")[0] or " " in str(jvm_publisher).strip()):
        raise OptionError(
            f"option jvmPublisher={jvm_publisher!r} must look like 'com.example.Feeds#method' "
            "or 'com.example.FeedPublisher' (a Python factory goes in option publisher)"
        )
    if publisher and ":" not in str(publisher):
        raise OptionError(f"option publisher={publisher!r} must look like 'package.module:factory'")
    return (
        str(publisher) if publisher else None,
        str(endpoint) if endpoint else None,
        str(jvm_publisher).strip() if jvm_publisher else None,
    )


def _shown(value: Any) -> str:
    """An option's value that may hold endpoints, as an error shows it (no token, and nothing after '?' or
    '=' of a value that is no address)."""
    return repr(value) if value is None else repr(redact_endpoints(str(value)))


ID_HINT = " (in id=address, an id is 1-64 letters, digits, '.', '_' or '-'; else the item is read as an address)"
PARTITION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
"""A partition id given as ``id=address`` (the JVM's ``RtOptions.PARTITION_ID``): kept in the checkpoint's offsets."""


def parse_endpoints(value: str) -> dict[str, str]:
    """Option endpoint: one address, or several comma-separated, each ``id=address`` (the id a plain
    name: letters, digits, '_', '-', '.') or an address whose endpoint name is its partition id.
    Returns partition id -> address, in the given order. The JVM's ``RtOptions`` reads it the same way."""
    from ...net.protocol.address import parse

    out: dict[str, str] = {}
    for item in (x.strip() for x in value.split(",")):
        if not item:
            continue
        pid, address = split_endpoint(item)
        if pid is not None and not PARTITION_ID.fullmatch(pid):
            raise OptionError(
                f"option endpoint: partition id '{pid}' must be 1-64 letters, digits, '.', '_' or '-' "
                "(it is kept in the checkpoint's offsets)"
            )
        try:
            name = parse(address).name
        except ValueError as exc:
            raise OptionError(f"option endpoint: {exc}{ID_HINT if pid is None and '=' in item else ''}") from exc
        pid = pid or name or ""
        if not pid:
            raise OptionError(
                f"option endpoint: {redact(address)} names no endpoint; give each partition an id "
                "(id=address) or an address with an endpoint name"
            )
        if pid in out:
            raise OptionError(f"option endpoint names partition {pid!r} twice; give each one its own id (id=address)")
        out[pid] = address
    return out


def _executor_fetch(o: dict[str, Any], endpoints: dict[str, str]) -> bool:
    default = "true" if len(endpoints) > 1 else "false"
    fetch = parse_bool("executorFetch", o.get("executorfetch", default))
    if len(endpoints) > 1 and not fetch:
        raise OptionError(
            f"option endpoint names {len(endpoints)} partitions ({', '.join(endpoints)}); several endpoints are read "
            "by executors (executorFetch=true): drop executorFetch=false, or read one endpoint"
        )
    if fetch and not endpoints and "executorfetch" in o:
        raise OptionError("option executorFetch applies to option endpoint (rows fetched straight from the endpoints)")
    if fetch:
        _refuse_for_partitions(o)
    return fetch


_NOT_WITH_PARTITIONS = {
    "resumable": "the endpoints keep the rows executors fetch: they are always read as resumable streams",
    "minrecordspertrigger": "each micro-batch takes what the partitions have (maxRecordsPerTrigger bounds it)",
    "maxtriggerdelay": "each micro-batch takes what the partitions have (maxRecordsPerTrigger bounds it)",
    "prefetch": "the endpoints keep rows available; nothing is prefetched into the reader",
    "logpath": "the endpoints keep what Spark has not committed; no replay log is needed",
    "numpartitions": "use minPartitions (Spark partitions per micro-batch, at least one per endpoint)",
    "batchtransport": "executors fetch straight from the endpoints",
}


def _refuse_for_partitions(o: dict[str, Any]) -> None:
    """Options of the single-reader path that executorFetch does not use: refused, saying why."""
    for key, why in _NOT_WITH_PARTITIONS.items():
        if key in o:
            name = next(k for k in SOURCE_OPTIONS if k.lower() == key)
            raise OptionError(f"option {name} does not apply when executors fetch from the endpoints: {why}")


def _record_bounds(o: dict[str, Any]) -> tuple[int | None, int | None, int]:
    """``(maxRecordsPerTrigger, minRecordsPerTrigger, maxBufferedRecords)``, consistent with each other."""
    max_r = parse_int("maxRecordsPerTrigger", o["maxrecordspertrigger"], 1) if "maxrecordspertrigger" in o else None
    min_r = parse_int("minRecordsPerTrigger", o["minrecordspertrigger"], 1) if "minrecordspertrigger" in o else None
    if max_r is not None and min_r is not None and min_r > max_r:
        raise OptionError(f"option minRecordsPerTrigger={min_r} is larger than maxRecordsPerTrigger={max_r}")
    max_buffered = parse_int("maxBufferedRecords", o.get("maxbufferedrecords", 100_000), 1)
    if max_r is not None and max_r > max_buffered:
        raise OptionError(
            f"option maxRecordsPerTrigger={max_r} exceeds maxBufferedRecords={max_buffered}: a micro-batch "
            "cannot hold more elements than rs_spark may buffer; raise maxBufferedRecords or lower the limit"
        )
    if min_r is not None and min_r > max_buffered:
        raise OptionError(f"option minRecordsPerTrigger={min_r} exceeds maxBufferedRecords={max_buffered}")
    return max_r, min_r, max_buffered


__all__ = ["SourceOptions", "SOURCE_OPTIONS"]
