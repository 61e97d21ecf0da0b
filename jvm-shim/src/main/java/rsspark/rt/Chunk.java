package rsspark.rt;

import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;

/** Consecutive rows of a stream (one payload's, or a slice of one), copied out of Arrow as UnsafeRows. */
record Chunk(List<InternalRow> rows) {
    int size() {
        return rows.size();
    }
}
