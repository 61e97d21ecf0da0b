package rsspark.rt;

import java.io.IOException;
import java.io.UncheckedIOException;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

/** Builds a partition's reader on the executor: the live (real-time) reader, or the inline rows' reader. */
final class RtReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        RtInputPartition p = (RtInputPartition) partition;
        try {
            return p.isLive() ? LiveReader.open(p) : new InlineReader(p);
        } catch (IOException e) {
            throw new UncheckedIOException(p.options().describe() + ": " + e.getMessage(), e);
        }
    }
}
