"""The options of a connection to an endpoint that the source and the sink share: how a lost
connection is noticed (keepaliveInterval, keepaliveTimeout) and how often it is tried again
(reconnectBackoff, reconnectBackoffMax, named after Kafka's reconnect.backoff.ms and
reconnect.backoff.max.ms). ``reactive-rt`` and the real-time sink (the JVM shim) take the same
names, with the same meaning and defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..net.zero_loss.outage import Backoff
from .durations import parse_duration
from .options import OptionError


@dataclasses.dataclass(frozen=True)
class EndpointLink:
    """Seconds: KEEPALIVE every ``keepalive``, lost after ``lifetime`` of silence; tries to reconnect
    ``backoff_first`` apart, doubling up to ``backoff_max``."""

    keepalive: float = 2.0
    lifetime: float = 10.0
    backoff_first: float = 0.1
    backoff_max: float = 10.0

    @classmethod
    def parse(cls, o: Mapping[str, Any]) -> EndpointLink:
        """From options whose keys are lower-cased; an inconsistent pair raises OptionError."""
        d = cls()
        link = cls(
            keepalive=_duration(o, "keepaliveInterval", d.keepalive),
            lifetime=_duration(o, "keepaliveTimeout", d.lifetime),
            backoff_first=_duration(o, "reconnectBackoff", d.backoff_first),
            backoff_max=_duration(o, "reconnectBackoffMax", d.backoff_max),
        )
        if link.lifetime <= link.keepalive:
            raise OptionError(
                f"option keepaliveTimeout={o.get('keepalivetimeout', '10s')!r} must be longer than keepaliveInterval="
                f"{o.get('keepaliveinterval', '2s')!r}: a connection is lost after that long without a frame, and "
                "KEEPALIVE frames come every keepaliveInterval"
            )
        if link.backoff_first > link.backoff_max:
            raise OptionError(
                f"option reconnectBackoff={o.get('reconnectbackoff', '100ms')!r} is longer than reconnectBackoffMax="
                f"{o.get('reconnectbackoffmax', '10s')!r}; the first pause cannot exceed the longest"
            )
        return link

    def client_options(self, token: str | None = None, tls: Any = None) -> dict[str, Any]:
        """Keyword arguments of ``rs_spark.net.connect*``: these timings, and ``token`` and ``tls`` when set."""
        kwargs: dict[str, Any] = {"keepalive": self.keepalive, "lifetime": self.lifetime}
        if token:
            kwargs["token"] = token
        if tls is not None:
            kwargs["tls"] = tls
        return kwargs

    @property
    def backoff(self) -> Backoff:
        return Backoff(self.backoff_first, self.backoff_max)


def _duration(o: Mapping[str, Any], name: str, default: float) -> float:
    value = o.get(name.lower())
    return default if value is None or value == "" else parse_duration(name, value)


__all__ = ["EndpointLink"]
