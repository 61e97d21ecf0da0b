"""The ceiling for a Python sink in benchmarks/sink.py: a bare DataSourceStreamArrowWriter that
receives the micro-batch's RecordBatches and discards them."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage


class _Discard(DataSourceStreamArrowWriter):
    def write(self, iterator):
        rows = 0
        for b in iterator:
            rows += b.num_rows
        return WriterCommitMessage()

    def commit(self, messages, batchId):
        pass

    def abort(self, messages, batchId):
        pass


class DiscardSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_discard"

    def streamWriter(self, schema, overwrite):
        return _Discard()
