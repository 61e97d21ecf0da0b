"""A Publisher that declares its schema, so ``format("reactive")`` needs no ``.schema(...)``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


class SchemaPublisher:
    """Wraps ``publisher`` and exposes ``schema`` (a ``pyarrow.Schema``, DDL string or StructType)."""

    __slots__ = ("_publisher", "schema")

    def __init__(self, publisher: Any, schema: Any) -> None:
        if publisher is None or schema is None:
            raise TypeError("with_schema() needs a publisher and a schema")
        self._publisher = publisher
        self.schema = schema

    def subscribe(self, subscriber: Any) -> None:
        """Subscribe to the wrapped publisher."""
        self._publisher.subscribe(subscriber)

    def pipe(self, *operators: Any) -> Any:
        """The wrapped publisher through ``operators`` (the result declares no schema)."""
        from ..streams.pipeline import pipe

        return pipe(self._publisher, *operators)


def with_schema(publisher: Any, schema: pa.Schema | str | Any) -> SchemaPublisher:
    """Return ``publisher`` with a declared ``schema``."""
    return SchemaPublisher(publisher, schema)


__all__ = ["SchemaPublisher", "with_schema"]
