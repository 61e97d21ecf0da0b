"""Fixtures a net test module makes for itself, with its own token: ``serve = serving(TOKEN)``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rs_spark import net


def serving(token: str, name: str = "nums") -> Any:
    """A fixture giving ``start(publisher, **serve_options)``: ``net.serve`` of ``publisher`` as
    ``name`` with ``token`` on 127.0.0.1; every server it started stops when the test ends."""

    @pytest.fixture
    def serve() -> Iterator[Callable[..., Any]]:
        servers: list[Any] = []

        def start(publisher: Any, **kw: Any) -> Any:
            s = net.serve(publisher, name=name, token=token, **kw)
            servers.append(s)
            return s

        yield start
        for s in servers:
            s.stop()

    return serve
