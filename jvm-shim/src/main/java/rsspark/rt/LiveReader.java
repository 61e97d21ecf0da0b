package rsspark.rt;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;

/**
 * The long-running task's reader: it holds the stream for the task's lifetime and hands Spark each
 * row as it arrives ({@link #nextWithTimeout} in real-time mode; {@link #next} when Spark re-runs a
 * planned range). Demand flows as the feed takes rows (at most {@code maxInFlight} in flight).
 * {@link #getOffset} is the position after the last row handed to Spark; when the task ends the
 * stream is detached (the next batch's task resumes it there) or, when the query is being stopped,
 * cancelled ({@code cancelOnStop}).
 */
final class LiveReader implements SupportsRealTimeRead<InternalRow> {
    /** How often a task looks for a newer committed position to acknowledge (see {@link Commits}). */
    static final long ACK_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final RtInputPartition p;
    private long acknowledged;
    private long nextAckCheck;
    private final RowFeed feed;
    private long position;
    private List<InternalRow> rows = List.of();
    private int index;
    private InternalRow current;

    private LiveReader(RtInputPartition p, RowFeed feed) {
        this.p = p;
        this.feed = feed;
        this.position = p.start();
        this.acknowledged = p.acknowledge();
        TaskChunks.sourceOpened(TaskChunks.currentTask());
    }

    static LiveReader open(RtInputPartition p) throws IOException {
        return new LiveReader(p, Feeds.open(p.options(), p.partition(), p.schema(), p.key(), p.run(), p.start(), p.acknowledge()));
    }

    @Override
    public RecordStatus nextWithTimeout(Long timeoutMs) throws IOException {
        return RecordStatus.newStatusWithoutArrivalTime(advance(TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMs))));
    }

    /** Spark re-runs a planned range (start..end) as a plain batch: every row of it, then false. */
    @Override
    public boolean next() throws IOException {
        if (p.end() < 0) {
            throw new IllegalStateException(p.options().describe(p.partition()) + ": a real-time partition was read as a plain batch; "
                    + "run the query with trigger(realTime=...) or plan it with an end offset");
        }
        long waitNs = TimeUnit.MILLISECONDS.toNanos(Math.max(100, p.options().pollTimeoutMs));
        while (position < p.end()) {
            if (advance(waitNs)) return true;
            if (feed.isComplete()) {
                throw new IOException(feed.where() + " completed at position " + position + ", before the end of the "
                        + "planned range " + p.start() + ".." + p.end() + ": those rows cannot be read again");
            }
        }
        return false;
    }

    /** Take the next row within {@code timeoutNs}; false when none came (or the planned end was reached). */
    private boolean advance(long timeoutNs) throws IOException {
        acknowledgeCommitted();
        if (p.end() >= 0 && position >= p.end()) return false;
        if (index >= rows.size()) {
            TaskChunks.chunkEnded(); // the sink sends the chunk's rows now, not row by row
            long deadline = System.nanoTime() + timeoutNs;
            Chunk c = feed.poll(timeoutNs);
            if (c == null) {
                if (feed.isComplete()) sleepUntil(deadline); // nothing will come: wait out the batch, not spin
                return false;
            }
            rows = c.rows();
            index = 0;
        }
        current = rows.get(index++);
        position++;
        TaskChunks.rowHanded();
        return true;
    }

    /**
     * Acknowledge upstream what Spark committed since (never beyond what this task read): a JVM
     * publisher's kept rows, when the driver shares this JVM. An endpoint's stream is acknowledged by
     * the driver itself when Spark commits ({@link DriverAcks}).
     */
    private void acknowledgeCommitted() throws IOException {
        if (p.options().isEndpoint()) return;
        long now = System.nanoTime();
        if (now - nextAckCheck < 0) return;
        nextAckCheck = now + ACK_EVERY_NANOS;
        long c = Math.min(Commits.of(p.key()), position);
        if (c > acknowledged) {
            feed.acknowledge(c);
            acknowledged = c;
        }
    }

    private static void sleepUntil(long deadline) throws IOException {
        long left = deadline - System.nanoTime();
        if (left <= 0) return;
        try {
            TimeUnit.NANOSECONDS.sleep(left);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted");
        }
    }

    @Override
    public InternalRow get() {
        return current;
    }

    @Override
    public PartitionOffset getOffset() {
        return new RtOffset.Partition(p.partition(), p.key(), position);
    }

    @Override
    public void close() {
        TaskChunks.sourceClosed();
        TaskContext tc = TaskContext.get();
        boolean stopping = tc != null && tc.isInterrupted();
        if (stopping && p.options().cancelOnStop) feed.cancel();
        else feed.detach();
    }
}
