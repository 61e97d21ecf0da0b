"""Spark's real-time mode (``trigger(realTime=...)``): the Python side of the shim's
``format("reactive-rt")`` source and real-time sink. :mod:`.queries` builds the DataFrame
(:func:`read_stream`) and starts the query (:func:`write_stream`); see docs/realtime.md."""

from ..served import stop_served
from .queries import SOURCE, as_record_batches, jvm_trigger, read_stream, write_stream

__all__ = ["SOURCE", "read_stream", "write_stream", "stop_served", "as_record_batches", "jvm_trigger"]
