"""Elements <-> Arrow record batches, schemas, malformed-element handling. Imports pyarrow only."""

from typing import TYPE_CHECKING

from .convert import DEFAULT_CORRUPT_COLUMN, Converted, ElementConverter, MalformedElementError, Mode
from .declared import SchemaPublisher, with_schema
from .ipc import from_ipc, to_ipc

__all__ = [
    "ElementConverter",
    "Converted",
    "MalformedElementError",
    "Mode",
    "DEFAULT_CORRUPT_COLUMN",
    "to_ipc",
    "from_ipc",
    "with_schema",
    "SchemaPublisher",
]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
