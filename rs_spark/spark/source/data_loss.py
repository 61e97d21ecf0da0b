"""Data loss: planned records that cannot be replayed, reported in one place (as Kafka's ``reportDataLoss``)."""

from __future__ import annotations

import logging

from .options import SourceOptions

log = logging.getLogger("rs_spark.source")


class DataLossError(RuntimeError):
    """Planned records cannot be replayed and ``failOnDataLoss`` is true."""


def report_data_loss(opts: SourceOptions, message: str, fix: str, continuing: str) -> None:
    """The one place data loss is reported (as Kafka's ``reportDataLoss``): with failOnDataLoss
    the query fails saying how to avoid it (``fix``), else a warning says what happens instead."""
    if opts.fail_on_data_loss:
        raise DataLossError(f"{message}. {fix}Set failOnDataLoss=false to {continuing}.")
    log.warning("%s; %s (failOnDataLoss=false)", message, continuing)


__all__ = ["DataLossError", "report_data_loss"]
