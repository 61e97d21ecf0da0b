package rsspark.rt;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode;
import org.apache.spark.sql.types.StructType;

/**
 * The driver's side of {@code reactive-rt}. One publisher is one ordered sequence, so every batch
 * has one partition.
 *
 * <p>Real-time mode ({@link #prepareForRealTimeMode}): the driver never touches the stream. Each
 * batch's single long-running task opens it at the batch's start offset and reads rows as they
 * arrive; Spark merges the task's end position ({@link #mergeOffsets}) into the batch's offset,
 * written to the checkpoint. The next batch's task resumes there and acknowledges upstream the
 * position Spark last committed ({@link #commit}), so the server keeps rows until then.
 *
 * <p>Micro-batch mode: the driver holds the stream ({@link DriverBuffer}) and ships each
 * micro-batch's rows inside its partition.
 */
final class RtStream implements MicroBatchStream, SupportsRealTimeMode, SupportsAdmissionControl, ReportsSourceMetrics {
    private final StructType schema;
    private final RtOptions o;
    private final String metadataPath;
    /** This query run (Spark builds the stream once per start of the query). */
    private final String run = java.util.UUID.randomUUID().toString();
    private String key;
    private volatile boolean realTime;
    private volatile long committed = -1;
    private DriverBuffer buffer;

    RtStream(StructType schema, RtOptions o, String metadataPath) {
        this.schema = schema;
        this.o = o;
        this.metadataPath = metadataPath;
    }

    private synchronized String key() {
        if (key == null) key = StreamKeys.keyFor(metadataPath, SparkSession.active().sparkContext().hadoopConfiguration());
        return key;
    }

    @Override
    public void prepareForRealTimeMode() {
        realTime = true;
    }

    @Override
    public Offset initialOffset() {
        return new RtOffset(key(), 0);
    }

    @Override
    public Offset deserializeOffset(String json) {
        RtOffset off = RtOffset.parse(json);
        if (!off.key.equals(key())) {
            throw new IllegalStateException("the checkpoint's offset names stream " + off.key + ", but this query's "
                    + "checkpoint keeps stream " + key() + " (" + StreamKeys.FILE + "): was the checkpoint copied from "
                    + "another query? Restore it, or start from a new checkpointLocation");
        }
        return off;
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
        return o.maxRecordsPerTrigger != null ? ReadLimit.maxRows(o.maxRecordsPerTrigger) : ReadLimit.allAvailable();
    }

    @Override
    public Offset latestOffset() {
        throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) should be called instead of this method");
    }

    @Override
    public Offset latestOffset(Offset start, ReadLimit limit) {
        RtOffset s = (RtOffset) start;
        if (realTime) return s; // each batch reads until Spark ends it: there is nothing to plan ahead
        try {
            return buffer().latest(s, limit);
        } catch (IOException e) {
            throw DriverBuffer.unchecked(o, e);
        }
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start) {
        RtOffset s = (RtOffset) start;
        return new InputPartition[] {RtInputPartition.live(schema, o, s.key, run, s.position, -1, committed)};
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
        RtOffset s = (RtOffset) start;
        RtOffset e = (RtOffset) end;
        if (e.position <= s.position) return new InputPartition[0];
        if (realTime) {
            // Spark re-runs a batch logged before a restart: the task reads exactly that range again.
            return new InputPartition[] {RtInputPartition.live(schema, o, s.key, run, s.position, e.position, committed)};
        }
        try {
            return new InputPartition[] {buffer().plan(s, e)};
        } catch (IOException ex) {
            throw DriverBuffer.unchecked(o, ex);
        }
    }

    @Override
    public Offset mergeOffsets(PartitionOffset[] offsets) {
        long position = -1;
        String k = key();
        for (PartitionOffset p : offsets) {
            RtOffset.Partition po = (RtOffset.Partition) p;
            if (!po.key.equals(k)) throw new IllegalStateException("a task read stream " + po.key + ", not " + k);
            position = Math.max(position, po.position);
        }
        if (position < 0) throw new IllegalStateException("no task of the batch reported where it stopped");
        return new RtOffset(k, position);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new RtReaderFactory();
    }

    @Override
    public void commit(Offset end) {
        long position = ((RtOffset) end).position;
        committed = Math.max(committed, position);
        Commits.committed(((RtOffset) end).key, position); // a running task in this JVM acknowledges it now
        if (buffer != null) {
            try {
                buffer.commit(position);
            } catch (IOException e) {
                throw DriverBuffer.unchecked(o, e);
            }
        }
    }

    @Override
    public void stop() {
        if (buffer != null) buffer.stop();
        if (realTime && o.cancelOnStop && key != null) {
            // A running task cancels the stream itself when Spark interrupts it; this catches a
            // stop between two batches, when the stream waits at the server for the next task.
            try {
                Feeds.cancelWaiting(o, key, run, Math.max(committed, 0));
            } catch (IOException | RuntimeException e) {
                LOG.warn("{}: the query stopped, but cancelling the publisher failed: {}; it is cancelled when its "
                        + "server's resume window ends", o.describe(), e.toString());
            }
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("rsspark.rt");

    @Override
    public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("mode", realTime ? "realTime" : "microBatch");
        m.put("committedPosition", Long.toString(committed));
        if (buffer != null) m.put("bufferedRows", Long.toString(buffer.buffered()));
        return m;
    }

    private DriverBuffer buffer() {
        if (buffer == null) buffer = new DriverBuffer(o, schema, key(), run);
        return buffer;
    }

    @Override
    public String toString() {
        return "reactive-rt[" + o.describe() + "]";
    }
}
