"""What the source's progress says about an endpoint it cannot reach (see :mod:`rs_spark.net.zero_loss.outage`).

While a subscription tries to resume its lost connection, micro-batches plan nothing (its Intake
receives nothing, as from a quiet publisher) and fail nothing; the progress JSON of each trigger
carries ``"outage": {"endpoint", "seconds", "attempts", "lastError", "givesUpInSeconds"}`` (the
address and the error redacted), and the reader logs a WARN line when it starts, once per 30 s and
when it ends.
"""

from __future__ import annotations

from typing import Any


def outage_progress(subscription: Any) -> dict[str, Any]:
    """``{"outage": {...}}`` while ``subscription`` (a resumable endpoint stream's) is without a
    connection, else ``{}`` (nothing for other publishers' subscriptions)."""
    report = getattr(subscription, "outage", None)
    as_progress = getattr(report, "as_progress", None)
    return {"outage": as_progress()} if callable(as_progress) else {}


__all__ = ["outage_progress"]
