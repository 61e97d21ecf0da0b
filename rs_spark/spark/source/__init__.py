"""The ``reactive`` source: a Publisher read with demand per micro-batch.

Shared by both readers: :mod:`.planner` (what each micro-batch reads: one pure decision),
:mod:`.read_limits` (Spark's read limits as the planner takes them), :mod:`.offsets`,
:mod:`.options`, :mod:`.resolve` (where the Publisher comes from), :mod:`.data_loss` (rows that
cannot be replayed, reported in one place), :mod:`.errors`, :mod:`.executor_rows` (elements to
Arrow on executors), :mod:`.sigterm` (the reader process's shutdown).

:mod:`.single` reads one publisher through the reader process (factory, endpoint, jvmPublisher;
replay log); :mod:`.partitioned` reads several endpoints as partitions fetched by executors;
:mod:`.batch_reader` is ``spark.read``; :mod:`.read_stream` serves Publishers of the user's process.
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ..._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
