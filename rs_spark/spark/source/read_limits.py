"""Spark's read limits, as the planner takes them (:class:`~.planner.Limits`)."""

from __future__ import annotations

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows

from .options import SourceOptions
from .planner import Limits


def default_read_limit(o: SourceOptions) -> ReadLimit:
    """Spark's read limit from maxRecordsPerTrigger / minRecordsPerTrigger (else everything available)."""
    if o.max_records_per_trigger is not None:
        return ReadMaxRows(o.max_records_per_trigger)
    if o.min_records_per_trigger is not None:
        return ReadMinRows(o.min_records_per_trigger)
    return ReadAllAvailable()


def limits_of(limit: ReadLimit, o: SourceOptions) -> Limits:
    """This micro-batch's limits: Spark's ``limit`` (ReadAllAvailable under Trigger.Once: no bound),
    with the bound Spark's one limit object cannot carry taken from the options."""
    if isinstance(limit, ReadMaxRows):
        return Limits(limit.max_rows, o.min_records_per_trigger, o.max_trigger_delay)
    if isinstance(limit, ReadMinRows):
        return Limits(o.max_records_per_trigger, limit.min_rows, o.max_trigger_delay)
    return Limits(None, None, o.max_trigger_delay)


__all__ = ["default_read_limit", "limits_of"]
