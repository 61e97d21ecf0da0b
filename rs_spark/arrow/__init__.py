"""Elements <-> Arrow record batches, schemas, malformed-element handling. Imports pyarrow only."""

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
