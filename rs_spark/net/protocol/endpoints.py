"""A server's endpoints by name: what it serves, found by the name a request routes to."""

from __future__ import annotations

import threading
from typing import Any

from . import frames as F
from .errors import Rejected


class Endpoint:
    """One served object: a ``publisher``, a ``subscriber`` (or a factory of them) or a
    ``processor`` factory."""

    __slots__ = ("kind", "target", "used")

    def __init__(self, kind: str, target: Any) -> None:
        self.kind = kind
        self.target = target
        self.used = False

    @classmethod
    def of(cls, kind: str, name: str, target: Any) -> Endpoint:
        """``target`` served as ``name``, or TypeError naming what a ``kind`` needs."""
        if kind == "publisher" and (target is None or not hasattr(target, "subscribe")):
            need = "a Publisher (an object with subscribe())"
        elif kind == "subscriber" and (target is None or not (hasattr(target, "on_subscribe") or callable(target))):
            need = "a Subscriber or a factory of Subscribers"
        elif kind == "processor" and (not callable(target) or hasattr(target, "on_subscribe")):
            need = "a factory (a callable returning a new Processor per channel)"
        else:
            return cls(kind, target)
        raise TypeError(f"add_{kind}({name!r}, ...) needs {need}, got {type(target).__name__}")


class Endpoints:
    """The endpoints a server serves, by name (thread-safe). ``base``: the server's address."""

    def __init__(self, base: str) -> None:
        self._base = base
        self._lock = threading.Lock()
        self._by_name: dict[str, Endpoint] = {}
        self.first: str | None = None  # the first endpoint added (what serve() served)

    def add(self, name: str, ep: Endpoint) -> None:
        if not isinstance(name, str) or not name or len(name.encode("utf-8")) > 255:
            raise ValueError(f"an endpoint name is a non-empty str of at most 255 UTF-8 bytes, got {name!r}")
        with self._lock:
            if name in self._by_name:
                raise ValueError(
                    f"{self._base} already serves an endpoint named {name!r}; pick another name or remove() it first"
                )
            self._by_name[name] = ep
            if self.first is None:
                self.first = name

    def remove(self, name: str) -> None:
        with self._lock:
            self._by_name.pop(name, None)

    def publisher_named(self, name: str) -> Any:
        with self._lock:
            ep = self._by_name.get(name)
        return ep.target if ep is not None and ep.kind == "publisher" else None

    def resolve(self, name: str | None, kind: str) -> tuple[str, Endpoint]:
        """The endpoint a request names (or the only one of its kind when it names none)."""
        with self._lock:
            eps = dict(self._by_name)
        if name is None:
            same = [(n, e) for n, e in eps.items() if e.kind == kind]
            if len(same) == 1:
                return same[0]  # a request without a route reaches the only endpoint of its kind
            # The error lists no names: what a server serves is not for whoever can connect to tell.
            raise Rejected(
                F.REJECTED,
                f"the request names no {kind} (routing metadata) and {self._base} "
                f"serves {len(same)} {kind}s; put the endpoint's name in the address",
            )
        ep = eps.get(name)
        if ep is None:
            raise Rejected(
                F.REJECTED,
                f"{self._base} serves no {kind} named {name!r}; check the name in the "
                "address (the server's own log and server.address name its endpoints)",
            )
        if ep.kind != kind and not (kind == "subscriber" and ep.kind == "processor"):
            fix = {"subscriber": "connect_subscriber()", "processor": "connect_processor()"}.get(ep.kind, "connect()")
            raise Rejected(F.REJECTED, f"{name!r} on {self._base} is a {ep.kind}, not a {kind}; use {fix}")
        return name, ep

    def use_once(self, ep: Endpoint, name: str) -> None:
        """A served Subscriber instance is subscribed once (rule 2.12): mark it used, or refuse."""
        with self._lock:
            if ep.used:
                raise Rejected(
                    F.REJECTED,
                    (
                        f"subscriber '{name}' on {self._base} was already subscribed once and a Subscriber "
                        "may be subscribed only once (rule 2.12); serve a factory (a callable returning a new "
                        "Subscriber) to accept many channels"
                    ),
                )
            ep.used = True


__all__ = ["Endpoint", "Endpoints"]
