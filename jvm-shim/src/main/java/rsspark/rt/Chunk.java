package rsspark.rt;

import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;

/** Consecutive rows of a stream (one payload's, or a slice of one), copied out of Arrow as UnsafeRows. */
final class Chunk {
    final List<InternalRow> rows;

    Chunk(List<InternalRow> rows) {
        this.rows = rows;
    }

    int size() {
        return rows.size();
    }
}
