"""The ``reactive`` sink: micro-batches delivered into a Subscriber, paced by its demand.

:mod:`.writer` (Spark's writer: stage on executors, deliver at commit), :mod:`.staging`,
:mod:`.task_delivery` (factory mode: a Subscriber per task), :mod:`.options`,
:mod:`.query_end` (the query's end reaches the Subscriber), :mod:`.write_stream` (a Subscriber
in the user's process), :mod:`.each_batch` (output mode update, through foreachBatch), :mod:`.mode_refusal`
(what to use when Spark refuses update mode for the format). The Subscriber itself is held by
:mod:`rs_spark.delivery`.
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ..._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
