"""Spark's real-time mode (``trigger(realTime=...)``): the Python side of the shim's
``format("reactive-rt")`` source and real-time sink. :mod:`.queries` builds the DataFrame
(:func:`read_stream`) and starts the query (:func:`write_stream`); see docs/realtime.md."""

from typing import TYPE_CHECKING

from ..served import stop_served
from .queries import SOURCE, as_record_batches, jvm_trigger, read_stream, write_stream

__all__ = ["SOURCE", "read_stream", "write_stream", "stop_served", "as_record_batches", "jvm_trigger"]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ..._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
