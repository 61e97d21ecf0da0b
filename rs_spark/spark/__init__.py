"""The Spark data source ``format("reactive")``. The only package of rs_spark that imports pyspark."""

from typing import TYPE_CHECKING

from . import rows as _rows  # noqa: F401  (registers the sink's "rows" elements with rs_spark.delivery)
from .datasource import ReactiveDataSource
from .options import OptionError
from .session import ensure_worker_python, local_session, register
from .source.data_loss import DataLossError
from .source.options import SourceOptions

__all__ = [
    "ReactiveDataSource",
    "register",
    "local_session",
    "ensure_worker_python",
    "OptionError",
    "SourceOptions",
    "DataLossError",
]

if TYPE_CHECKING:  # what the module __getattr__ below makes reachable at run time, for type checkers and IDEs
    from . import durations, jvm, realtime, sink, source  # noqa: F401
else:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
