"""A Publisher of this process served as Arrow: its elements converted here, with pyspark's rules.

``read_stream`` and ``realtime.read_stream`` serve a Publisher of the user's process. Its elements
become record batches of the declared schema in this process (in the user's time zone, as Spark
Connect's ``createDataFrame`` converts in the client), in chunks sized by demand
(:func:`rs_spark.arrow.chunking.record_batches`), and cross with the ``arrow`` codec.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql.types import StructType

from ...arrow.chunking import CHUNK_ROWS, Convert, record_batches
from ...arrow.convert import DEFAULT_CORRUPT_COLUMN, Mode
from ...streams.pipeline import PublisherBase
from ...streams.types import Publisher
from .to_arrow import element_converter

log = logging.getLogger("rs_spark.source")


def served_batches(
    publisher: Publisher[Any],
    schema: StructType,
    mode: Mode | str = Mode.FAILFAST,
    corrupt_column: str = DEFAULT_CORRUPT_COLUMN,
    size: int = CHUNK_ROWS,
) -> PublisherBase[Any]:
    """``publisher``'s elements as record batches of ``schema`` (RecordBatches pass, conformed): a
    malformed element fails the stream (FAILFAST, naming its offset and field), becomes a row of nulls
    with its text in ``corrupt_column`` (PERMISSIVE, when the schema has that column) or is dropped."""
    parsed = mode if isinstance(mode, Mode) else Mode.parse(mode)

    def fresh() -> Convert:
        converter = element_converter(schema, parsed, corrupt_column)

        def convert(elements: list[Any], first: int) -> Any:
            c = converter.convert(elements, first)
            if c.malformed:  # the reader never sees these elements: say here what became of them
                what = "dropped" if parsed is Mode.DROPMALFORMED else "kept as rows of nulls"
                log.warning(
                    "read_stream: %d malformed elements among offsets %d-%d %s (mode=%s)",
                    c.malformed,
                    first,
                    first + len(elements) - 1,
                    what,
                    parsed.value,
                )
            return c.batch

        return convert

    return record_batches(publisher, fresh, size)


__all__ = ["served_batches"]
