"""The one way tests wait for something another thread or process does: poll a condition until it
holds, failing with what was awaited (never a bare sleep used as synchronisation)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(
    cond: Callable[[], Any], what: str | Callable[[], str], timeout: float = 30.0, interval: float = 0.01
) -> Any:
    """Return ``cond()``'s first truthy value; fail the test naming ``what`` after ``timeout`` seconds.

    ``what`` may be a callable: it is asked only at the timeout, so the failure can show the state
    reached (``lambda: f"no connection left; {server.connection_count} open"``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what() if callable(what) else what}")
        time.sleep(interval)
