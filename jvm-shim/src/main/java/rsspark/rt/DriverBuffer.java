package rsspark.rt;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.CompositeReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.types.StructType;

/**
 * Micro-batch mode: the driver holds the stream, buffers at most {@code maxBufferedRecords} rows
 * (decoded and validated), offers what arrived as the next micro-batch and ships a micro-batch's
 * rows inside its partition. {@link #commit} acknowledges upstream and
 * frees what Spark committed. Used by the stream execution thread only.
 */
final class DriverBuffer {
    private final RtOptions o;
    private final StructType schema;
    private final String key;
    private final String run;
    private final ArrayDeque<KeptChunk> entries = new ArrayDeque<>();
    private RowFeed feed;
    private long base; // position of the first buffered row
    private long received; // position after the last buffered row

    DriverBuffer(RtOptions o, StructType schema, String key, String run) {
        this.o = o;
        this.schema = schema;
        this.key = key;
        this.run = run;
    }

    /** The offset of the next micro-batch: what arrived after {@code start}, within the read limit. */
    RtOffset latest(RtOffset start, ReadLimit limit) throws IOException {
        open(start.position);
        fill(0);
        if (received <= start.position && !feed.isComplete()) fill(TimeUnit.MILLISECONDS.toNanos(o.pollTimeoutMs));
        long end = received;
        long max = maxRows(limit);
        if (max >= 0) end = Math.min(end, start.position + max);
        return new RtOffset(key, end);
    }

    /** The micro-batch {@code start..end} as one partition carrying its rows. */
    RtInputPartition plan(RtOffset start, RtOffset end) throws IOException {
        open(start.position);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(30_000, o.connectTimeoutMs));
        while (received < end.position) { // a restart re-plans a logged batch: wait for its rows to come again
            if (feed.isComplete() || System.nanoTime() > deadline) {
                throw new IOException(feed.where() + " sent rows up to position " + received + " only; the micro-batch "
                        + "planned before the restart needs " + start.position + ".." + end.position);
            }
            fill(TimeUnit.MILLISECONDS.toNanos(200));
        }
        List<InternalRow> rows = new ArrayList<>((int) (end.position - start.position));
        for (KeptChunk e : entries) {
            if (e.end() <= start.position || e.position() >= end.position) continue;
            int from = (int) Math.max(0, start.position - e.position());
            int to = (int) Math.min(e.chunk().size(), end.position - e.position());
            rows.addAll(e.chunk().rows().subList(from, to));
        }
        return RtInputPartition.inline(schema, o, key, start.position, end.position, rows);
    }

    /** Spark committed every row before {@code position}: acknowledge it upstream and free those rows. */
    void commit(long position) throws IOException {
        while (!entries.isEmpty() && entries.peekFirst().end() <= position) {
            base = entries.pollFirst().end();
        }
        if (feed != null) feed.acknowledge(position);
    }

    long buffered() {
        return received - base;
    }

    void stop() {
        if (feed == null) return;
        if (o.cancelOnStop) feed.cancel();
        else feed.detach();
        feed = null;
    }

    private void open(long position) throws IOException {
        if (feed != null && position >= base && position <= received) return;
        if (feed != null) {
            if (position < base) {
                throw new IllegalStateException(o.describe() + ": Spark asks for rows from position " + position
                        + ", but this driver released the rows before " + base + " when Spark committed them");
            }
            feed.detach(); // Spark moved past what arrived (a checkpoint ahead of this stream): resume there
        }
        entries.clear();
        base = received = position;
        feed = Feeds.open(o, RtOptions.SINGLE, schema, key, run, position, -1); // acknowledgements come with commit()
    }

    /** Take what arrived, waiting up to {@code waitNs} for a first chunk, while the buffer has room. */
    private void fill(long waitNs) throws IOException {
        long wait = waitNs;
        while (received - base < o.maxBufferedRecords) {
            Chunk c = feed.poll(wait);
            if (c == null) return;
            entries.addLast(new KeptChunk(received, c));
            received += c.size();
            wait = 0;
        }
    }

    private static long maxRows(ReadLimit limit) {
        if (limit instanceof ReadMaxRows) return ((ReadMaxRows) limit).maxRows();
        if (limit instanceof CompositeReadLimit) {
            long max = -1;
            for (ReadLimit l : ((CompositeReadLimit) limit).getReadLimits()) {
                long m = maxRows(l);
                if (m >= 0) max = max < 0 ? m : Math.min(max, m);
            }
            return max;
        }
        return -1;
    }

    static UncheckedIOException unchecked(RtOptions o, IOException e) {
        return new UncheckedIOException(o.describe() + ": " + e.getMessage(), e);
    }
}
