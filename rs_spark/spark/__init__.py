"""The Spark data source ``format("reactive")``. The only package of rs_spark that imports pyspark."""

from .options import OptionError, SourceOptions
from .reader import DataLossError
from .session import ensure_worker_python, local_session, register
from .source import ReactiveDataSource

__all__ = [
    "ReactiveDataSource",
    "register",
    "local_session",
    "ensure_worker_python",
    "OptionError",
    "SourceOptions",
    "DataLossError",
]
