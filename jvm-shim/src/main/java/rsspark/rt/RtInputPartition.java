package rsspark.rt;

import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.types.StructType;

/**
 * One partition of {@code reactive-rt}: the stream from {@code start} to {@code end} (-1: no end, a
 * real-time task reads until Spark ends its batch). A live partition is read from the publisher by
 * the task itself; an inline one (micro-batch mode) carries its rows, which the driver received.
 */
record RtInputPartition(
        StructType schema,
        RtOptions options,
        /* The partition's id ({@link RtOptions#SINGLE} for one publisher). */
        String partition,
        /* The stream this partition reads. */
        String key,
        /* The query run that planned it (see {@link JvmFeed#open}). */
        String run,
        long start,
        long end,
        /* Rows before this position are durable (Spark committed them): the reader acknowledges it (-1: none). */
        long acknowledge,
        /* null: live (UnsafeRows: serializable). */
        List<InternalRow> rows) implements InputPartition {

    static RtInputPartition live(StructType schema, RtOptions options, String partition, String key, String run,
            long start, long end, long ack) {
        return new RtInputPartition(schema, options, partition, key, run, start, end, ack, null);
    }

    static RtInputPartition inline(StructType schema, RtOptions options, String key, long start, long end,
            List<InternalRow> rows) {
        return new RtInputPartition(schema, options, RtOptions.SINGLE, key, null, start, end, -1, rows);
    }

    boolean isLive() {
        return rows == null;
    }
}
