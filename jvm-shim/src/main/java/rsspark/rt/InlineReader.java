package rsspark.rt;

import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;

/** The rows of a micro-batch the driver received (they travel in the partition). */
final class InlineReader implements PartitionReader<InternalRow> {
    private final List<InternalRow> rows;
    private int next = -1;

    InlineReader(RtInputPartition p) {
        rows = p.rows();
    }

    @Override
    public boolean next() {
        next++;
        return next < rows.size();
    }

    @Override
    public InternalRow get() {
        return rows.get(next);
    }

    @Override
    public void close() {
        // the rows are on the heap; nothing to free
    }
}
