"""The ``reactive`` source: a Publisher read with demand per micro-batch.

:mod:`.reader` (Spark's reader: offsets become ``request(n)``), :mod:`.live` (the driver-side
reader process's state), :mod:`.intake` (the Subscriber in the reader process), :mod:`.upstream`
(where rows can be asked for again: offsets <-> stream positions, acknowledgements),
:mod:`.partitions` (where a micro-batch's rows are for executors), :mod:`.partitioned` (several
endpoints as partitions, read by executors), :mod:`.data_loss` (rows that cannot be replayed,
reported in one place), :mod:`.options`, :mod:`.resolve` (where the Publisher comes from),
:mod:`.replay_log` (planned micro-batches made durable), :mod:`.bind_address` and
:mod:`.sigterm` (the reader process's network and shutdown), :mod:`.read_stream` (Publishers in
the user's process).
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ..._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
