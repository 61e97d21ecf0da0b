package rsspark.rt;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

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
 * The driver's side of {@code reactive-rt}. Each publisher is one ordered sequence: one partition,
 * with its own position in the offset ({@link RtOffset}); option {@code endpoint} may name several.
 *
 * <p>Real-time mode ({@link #prepareForRealTimeMode}): the driver never touches the streams. Each
 * batch has one long-running task per partition, which opens its stream at the batch's start
 * position and reads rows as they arrive; Spark merges the tasks' end positions
 * ({@link #mergeOffsets}) into the batch's offset, written to the checkpoint. The next batch's tasks
 * resume there. When Spark commits a batch ({@link #commit}) the driver acknowledges each stream's
 * position upstream at once ({@link DriverAcks}), so the server keeps rows only until then.
 *
 * <p>Micro-batch mode (one publisher only): the driver holds the stream ({@link DriverBuffer}) and
 * ships each micro-batch's rows inside its partition.
 */
final class RtStream implements MicroBatchStream, SupportsRealTimeMode, SupportsAdmissionControl, ReportsSourceMetrics {
    private final StructType schema;
    private final RtOptions o;
    private final String metadataPath;
    /** This query run (Spark builds the stream once per start of the query). */
    private final String run = java.util.UUID.randomUUID().toString();
    private final List<String> partitions;
    private String key;
    private volatile boolean realTime;
    /** Partition id -> the last position Spark committed. */
    private final Map<String, Long> committed = new ConcurrentHashMap<>();
    /** The start offset of the batch being planned: partitions no task reported keep its position. */
    private volatile RtOffset planned;
    private DriverBuffer buffer;
    private DriverAcks acks;

    RtStream(StructType schema, RtOptions o, String metadataPath) {
        this.schema = schema;
        this.o = o;
        this.metadataPath = metadataPath;
        this.partitions = o.partitions();
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
        Map<String, Long> zero = new TreeMap<>();
        for (String p : partitions) zero.put(p, 0L);
        return new RtOffset(key(), zero);
    }

    @Override
    public Offset deserializeOffset(String json) {
        RtOffset off = RtOffset.parse(json);
        if (!off.key.equals(key())) {
            throw new IllegalStateException("the checkpoint's offset names stream " + off.key + ", but this query's "
                    + "checkpoint keeps stream " + key() + " (" + StreamKeys.FILE + "): was the checkpoint copied from "
                    + "another query? Restore it, or start from a new checkpointLocation");
        }
        checkPartitions(off, partitions);
        return off;
    }

    /** The offset must name exactly the partitions option endpoint names (else IllegalStateException saying both). */
    static void checkPartitions(RtOffset off, List<String> partitions) {
        if (off.positions.keySet().equals(new java.util.TreeSet<>(partitions))) return;
        throw new IllegalStateException("the checkpoint's offset " + off.json() + " reads "
                + (off.isSingle() ? "one endpoint" : "partitions " + off.positions.keySet()) + ", but option endpoint names "
                + (partitions.equals(List.of(RtOptions.SINGLE)) ? "one endpoint" : "partitions " + partitions)
                + ": restore option endpoint as the query that wrote the checkpoint had it, or start from a new "
                + "checkpointLocation");
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
        if (!s.isSingle()) {
            throw new IllegalStateException(o.describe() + ": several endpoints are read in real-time mode only "
                    + "(trigger(realTime=...)); for micro-batches read them with format('reactive'), or one endpoint here");
        }
        try {
            return buffer().latest(s, limit);
        } catch (IOException e) {
            throw DriverBuffer.unchecked(o, e);
        }
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start) {
        RtOffset s = (RtOffset) start;
        planned = s;
        List<InputPartition> out = new ArrayList<>();
        for (String p : partitions) {
            out.add(RtInputPartition.live(schema, o, p, RtOffset.streamKey(s.key, p), run, s.position(p), -1,
                    committed.getOrDefault(p, -1L)));
        }
        return out.toArray(new InputPartition[0]);
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
        RtOffset s = (RtOffset) start;
        RtOffset e = (RtOffset) end;
        if (realTime) {
            // Spark re-runs a batch logged before a restart: each task reads exactly its range again.
            List<InputPartition> out = new ArrayList<>();
            for (String p : partitions) {
                if (e.position(p) <= s.position(p)) continue;
                out.add(RtInputPartition.live(schema, o, p, RtOffset.streamKey(s.key, p), run, s.position(p),
                        e.position(p), committed.getOrDefault(p, -1L)));
            }
            return out.toArray(new InputPartition[0]);
        }
        if (e.position <= s.position) return new InputPartition[0];
        try {
            return new InputPartition[] {buffer().plan(s, e)};
        } catch (IOException ex) {
            throw DriverBuffer.unchecked(o, ex);
        }
    }

    @Override
    public Offset mergeOffsets(PartitionOffset[] offsets) {
        return merge(key(), planned, partitions, offsets);
    }

    /**
     * The batch's end offset: per partition the position its task reported, or the batch's start
     * ({@code start}) for a partition no task reported.
     */
    static RtOffset merge(String key, RtOffset start, List<String> partitions, PartitionOffset[] offsets) {
        Map<String, Long> positions = new TreeMap<>();
        for (PartitionOffset p : offsets) {
            RtOffset.Partition po = (RtOffset.Partition) p;
            String expected = RtOffset.streamKey(key, po.partition());
            if (!po.key().equals(expected) || !partitions.contains(po.partition())) {
                throw new IllegalStateException("a task read stream " + po.key() + " (partition '" + po.partition()
                        + "'), not one of this query's streams");
            }
            positions.merge(po.partition(), po.position(), Math::max);
        }
        for (String p : partitions) {
            if (positions.containsKey(p)) continue;
            if (start == null) throw new IllegalStateException("no task of the batch reported where partition '" + p
                    + "' stopped");
            positions.put(p, start.position(p));
        }
        return new RtOffset(key, positions);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new RtReaderFactory();
    }

    @Override
    public void commit(Offset end) {
        RtOffset e = (RtOffset) end;
        for (Map.Entry<String, Long> p : e.positions.entrySet()) {
            long position = p.getValue();
            Long before = committed.get(p.getKey());
            committed.merge(p.getKey(), position, Math::max);
            String stream = RtOffset.streamKey(e.key, p.getKey());
            Commits.committed(stream, position); // a jvmPublisher's running task in this JVM frees its kept rows
            if (realTime && (before == null || position > before)) acks().acknowledge(p.getKey(), stream, position);
        }
        if (buffer != null) {
            try {
                buffer.commit(e.position);
            } catch (IOException ex) {
                throw DriverBuffer.unchecked(o, ex);
            }
        }
    }

    private synchronized DriverAcks acks() {
        if (acks == null) acks = new DriverAcks(o);
        return acks;
    }

    @Override
    public void stop() {
        if (buffer != null) buffer.stop();
        synchronized (this) {
            if (acks != null) acks.close();
        }
        if (realTime && o.cancelOnStop && key != null) {
            // A running task cancels the stream itself when Spark interrupts it; this catches a
            // stop between two batches, when the stream waits at the server for the next task.
            for (String p : partitions) {
                try {
                    Feeds.cancelWaiting(o, p, RtOffset.streamKey(key, p), run, Math.max(committed.getOrDefault(p, 0L), 0));
                } catch (IOException | RuntimeException e) {
                    LOG.warn("{}: the query stopped, but cancelling the publisher failed: {}; it is cancelled when its "
                            + "server's resume window ends", o.describe(p), e.toString());
                }
            }
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("rsspark.rt");

    @Override
    public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("mode", realTime ? "realTime" : "microBatch");
        m.put("committedPosition", committed.size() == 1 && committed.containsKey(RtOptions.SINGLE)
                ? Long.toString(committed.get(RtOptions.SINGLE)) : new TreeMap<>(committed).toString());
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
