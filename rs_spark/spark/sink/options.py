"""Options of the ``reactive`` sink (``df.writeStream.format("reactive")``), parsed in one place."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ...delivery import ELEMENTS
from ...net.protocol.address import parse, redact_address
from ...net.protocol.tls_files import TLS_OPTIONS, TlsFiles
from ..durations import parse_duration
from ..link_options import EndpointLink
from ..options import OptionError, check_known, factory_options, lookup, parse_int, parse_tls, redacted_repr

SUBSCRIBER_PREFIX = "subscriber."
"""Options starting with this prefix go to the user's subscriber factory unchecked."""

RECONNECT_TIMEOUT = 600.0
"""Option reconnectTimeout's default: seconds a commit keeps trying an unreachable hub (10 minutes)."""

SINK_OPTIONS: dict[str, str] = {
    "endpoint": "address of a served Subscriber (rs_spark.serve_sink / rs_spark.write_stream), with ?token=",
    "subscriber": "package.module:factory called on executors, once per task, with its options (subscriber.NAME "
    "as NAME)",
    "token": "authentication token for the endpoint (or ?token= in it)",
    **TLS_OPTIONS,
    "elements": "subscriber factory mode: dicts (default), rows, tuples or batches",
    "inlineMaxBytes": "largest staged partition carried inside the commit message (default 64m); "
    "rs_spark.write_stream in local mode without stagingLocation sets 1m and stages the rest on local disk",
    "stagingLocation": "pyarrow filesystem URI where bigger partitions are staged (local, s3://, hdfs://, ...)",
    "commitTimeout": "longest a commit waits for the Subscriber's demand before failing (default: no limit)",
    "reconnectTimeout": "how long a micro-batch's commit keeps trying to reach an unreachable hub (connection "
    "refused, reset, or silent past keepaliveTimeout) before the query fails; a retried commit delivers no row twice "
    "(the hub's ledger) (default 10min)",
    "keepaliveInterval": "how often the commit's connection to the hub sends KEEPALIVE (default 2s)",
    "keepaliveTimeout": "how long a silent connection to the hub lives before it is taken as lost and the commit "
    "is tried again (default 10s)",
    "reconnectBackoff": "the first pause between tries to reach the hub, doubled each try, with jitter (as Kafka's "
    "reconnect.backoff.ms) (default 100ms)",
    "reconnectBackoffMax": "the longest pause between tries to reach the hub (as Kafka's reconnect.backoff.max.ms) "
    "(default 10s)",
    "keepSubscriberOnAbort": "false (default: a failed micro-batch ends the Subscriber with on_error) or a window "
    "(e.g. 10min; true: 10min) the Subscriber is kept for the query restarted from its checkpoint",
    "checkpointLocation": "Spark's own option (passed through)",
    "path": "ignored (Spark passes it for .save(path)/.start(path))",
    "queryName": "Spark's own option (passed through from DataStreamWriter.queryName; ignored)",
}

_SIZE = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def parse_size(name: str, value: Any) -> int:
    text = str(value).strip().lower()
    num = text.rstrip("bkmg")
    unit = text[len(num) :]
    try:
        return int(float(num) * _SIZE[unit])
    except (ValueError, KeyError):
        raise OptionError(f"option {name}={value!r} is not a size; use e.g. '64m', '512k' or bytes") from None


@dataclasses.dataclass(frozen=True, repr=False)
class SinkOptions:
    endpoint: str | None
    subscriber: str | None
    token: str | None
    elements: str
    inline_max_bytes: int
    staging_location: str | None
    commit_timeout: float | None
    raw: dict[str, Any]
    keep_on_abort: float | None = None
    factory: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The options for the ``subscriber`` factory: ``subscriber.*``, prefix stripped."""
    tls: TlsFiles | None = None
    """Options tlsCaFile, tlsCertFile, tlsKeyFile, tlsHostname: how a tls:// endpoint is trusted."""
    reconnect_timeout: float = RECONNECT_TIMEOUT
    link: EndpointLink = dataclasses.field(default_factory=lambda: EndpointLink())
    """Options keepaliveInterval, keepaliveTimeout, reconnectBackoff, reconnectBackoffMax."""

    def __repr__(self) -> str:  # the token, and any address holding one, redacted
        return redacted_repr(self)

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> SinkOptions:
        check_known(options, SINK_OPTIONS, "format('reactive') (sink)", SUBSCRIBER_PREFIX, "subscriber")
        o = lookup(options)
        endpoint, subscriber = o.get("endpoint"), o.get("subscriber")
        if bool(endpoint) == bool(subscriber):
            raise OptionError(
                "writeStream.format('reactive') needs exactly one of option 'endpoint' (a Subscriber served with "
                "rs_spark.serve_sink; delivery in batchId order, exactly once) or option 'subscriber' "
                '("package.module:factory", one Subscriber per task on executors, at least once); got '
                f"endpoint={repr(endpoint) if endpoint is None else repr(redact_address(str(endpoint)))}, "
                f"subscriber={subscriber!r}. From a notebook, "
                "rs_spark.write_stream(df, subscriber) sets this up for an in-memory Subscriber."
            )
        if endpoint:
            _check_address(str(endpoint))
        if subscriber and ":" not in str(subscriber):
            raise OptionError(f"option subscriber={subscriber!r} must look like 'package.module:factory'")
        elements = str(o.get("elements", "dicts")).lower()
        if elements not in ELEMENTS:
            raise OptionError(f"option elements={elements!r}: use one of {', '.join(ELEMENTS)}")
        if endpoint and "elements" in o:
            raise OptionError(
                "option elements applies to subscriber factories only; a served Subscriber chooses "
                "its elements where it is served: rs_spark.serve_sink(sub, elements=...) or "
                "rs_spark.write_stream(df, sub, elements=...)"
            )
        timeout = o.get("committimeout")
        return cls(
            endpoint=str(endpoint) if endpoint else None,
            subscriber=str(subscriber) if subscriber else None,
            token=o.get("token"),
            elements=elements,
            inline_max_bytes=parse_size("inlineMaxBytes", o.get("inlinemaxbytes", "64m")),
            staging_location=o.get("staginglocation") or None,
            commit_timeout=parse_duration("commitTimeout", timeout) if timeout else None,
            raw=o,
            keep_on_abort=keep_window(o.get("keepsubscriberonabort")),
            factory=factory_options(options, SUBSCRIBER_PREFIX),
            tls=parse_tls(o, [str(endpoint)] if endpoint else [], None if endpoint else "subscriber"),
            reconnect_timeout=parse_duration("reconnectTimeout", o["reconnecttimeout"])
            if o.get("reconnecttimeout")
            else RECONNECT_TIMEOUT,
            link=EndpointLink.parse(o),
        )

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``rs_spark.net.connect*`` for the hub's endpoint."""
        return self.link.client_options(self.token, self.tls)


def _check_address(endpoint: str) -> None:
    """A malformed address fails the query at its start, shown without its token."""
    try:
        parse(endpoint)
    except ValueError as exc:
        raise OptionError(f"option endpoint: {exc}") from exc


KEEP_DEFAULT = 600.0
"""``keepSubscriberOnAbort=true``: the window in seconds (10 minutes)."""


def keep_window(value: Any) -> float | None:
    """Option ``keepSubscriberOnAbort``: None (false, the default) or the window in seconds."""
    if value is None or str(value).strip().lower() in ("", "false"):
        return None
    if str(value).strip().lower() == "true":
        return KEEP_DEFAULT
    return parse_duration("keepSubscriberOnAbort", value)  # at least 1s (durations.MINIMUMS)


__all__ = ["SinkOptions", "SINK_OPTIONS", "SUBSCRIBER_PREFIX", "parse_size", "parse_int", "keep_window"]
