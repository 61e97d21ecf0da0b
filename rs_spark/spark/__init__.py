"""The Spark data source ``format("reactive")``. The only package of rs_spark that imports pyspark."""

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
