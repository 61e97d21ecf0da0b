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
final class RtInputPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final StructType schema;
    final RtOptions options;
    /** The partition's id ({@link RtOptions#SINGLE} for one publisher). */
    final String partition;
    /** The stream this partition reads. */
    final String key;
    /** The query run that planned it (see {@link JvmFeed#open}). */
    final String run;
    final long start;
    final long end;
    /** Rows before this position are durable (Spark committed them): the reader acknowledges it (-1: none). */
    final long acknowledge;
    final List<InternalRow> rows; // null: live (UnsafeRows: serializable)

    private RtInputPartition(StructType schema, RtOptions options, String partition, String key, String run, long start,
            long end, long acknowledge, List<InternalRow> rows) {
        this.schema = schema;
        this.options = options;
        this.partition = partition;
        this.key = key;
        this.run = run;
        this.start = start;
        this.end = end;
        this.acknowledge = acknowledge;
        this.rows = rows;
    }

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
