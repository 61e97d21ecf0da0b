package rsspark.rt;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

import rsspark.rsocket.ArrowPayloads;
import rsspark.rsocket.ChannelWriter;
import rsspark.rsocket.Connection;
import rsspark.rsocket.ConnectionLostException;
import rsspark.rsocket.Endpoint;
import rsspark.rsocket.Outage;
import rsspark.rsocket.ProtocolException;
import rsspark.rsocket.RemoteException;
import rsspark.rsocket.TlsRefusedException;

/**
 * One task's channel into the delivery hub. The task thread queues rows ({@link #add}, blocking
 * while {@code maxQueuedRows} wait); a sender thread sends whatever is queued as one payload, as soon
 * as the hub grants credit: one row per payload while rows trickle in, bigger payloads when they
 * come faster than a payload's round trip, with no wait added to gather them. When our
 * {@code reactive-rt} source reads in the same task, the sender is woken at the end of each of the
 * source's chunks instead of at every row ({@link TaskChunks}): a chunk's rows leave as one payload,
 * unless that would hold a row longer than {@link TaskChunks#MAX_HOLD_NANOS}.
 *
 * <p>A lost connection to the hub (refused, reset, or silent past {@code keepaliveTimeout}) does not
 * fail the task: the channel keeps every payload of the epoch it sent (up to {@code maxRetainedRows}
 * rows), opens a new channel and sends them again, spaced by {@code reconnectBackoff} /
 * {@code reconnectBackoffMax}, for up to {@code reconnectTimeout}. The hub's ledger skips the rows it
 * delivered already: nothing reaches the Subscriber twice. An answer of the hub (a refusal, the
 * Subscriber's failure) is final, as before.
 */
final class SinkChannel {
    // The hub's tags (rs_spark/delivery/wire.py).
    static final String META_BATCH = "rs_spark.batch_id";
    static final String META_START = "rs_spark.start_row";
    static final String META_TOTAL = "rs_spark.batch_rows";
    static final String META_OPEN = "rs_spark.open_ended";
    static final String META_PARTITION = "rs_spark.partition";

    private ChannelWriter writer; // replaced when a lost connection is recovered (under lock)
    private final Endpoint endpoint;
    private final Connection.Options connection;
    private final ArrayDeque<byte[]> retained = new ArrayDeque<>(); // payloads of the epoch sent so far
    private final ArrayDeque<Integer> retainedRowCounts = new ArrayDeque<>();
    private long retainedRows;
    private boolean overflowed; // more than maxRetainedRows sent: a lost connection cannot be recovered
    private final ReactiveSinkWriter.SinkOptions o;
    private final long epoch;
    private final long partition;
    private final scala.Function1<Object, Object> toInternal;
    private final VectorSchemaRoot root;
    private final ArrowWriter arrow;
    private final Schema schema;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final ArrayDeque<InternalRow> queue = new ArrayDeque<>();
    private final Thread sender;
    private boolean finishing;
    private boolean stopped;
    private IOException failure;
    private long sent; // rows sent: the next row's index within the epoch
    private final long task; // the Spark task attempt writing (-1: none)
    private final long maxHoldNanos; // the longest a row is held for its chunk's end
    private long heldSince; // System.nanoTime() when the oldest queued row was queued (under lock)
    private final Runnable flusher = this::flush;

    private SinkChannel(ChannelWriter writer, Endpoint endpoint, Connection.Options connection, StructType schema,
            ReactiveSinkWriter.SinkOptions o, long partition, long epoch, long task, long maxHoldNanos) {
        this.writer = writer;
        this.endpoint = endpoint;
        this.connection = connection;
        this.task = task;
        this.maxHoldNanos = maxHoldNanos;
        this.o = o;
        this.epoch = epoch;
        this.partition = partition;
        this.toInternal = CatalystTypeConverters.createToCatalystConverter(schema);
        this.schema = ArrowUtils.toArrowSchema(schema, "UTC", true);
        this.root = VectorSchemaRoot.create(this.schema, Feeds.allocator());
        this.arrow = ArrowWriter.create(root);
        this.sender = new Thread(this::sendLoop, "rs-spark-sink-sender epoch " + epoch);
        this.sender.setDaemon(true);
    }

    static SinkChannel open(Endpoint endpoint, StructType schema, ReactiveSinkWriter.SinkOptions o, long partition,
            long epoch) throws IOException {
        return open(endpoint, schema, o, partition, epoch, TaskChunks.currentTask(), TaskChunks.MAX_HOLD_NANOS);
    }

    /**
     * As above, for Spark task attempt {@code task}, holding rows for their chunk's end at most
     * {@code maxHoldNanos} (tests name both: they run outside Spark, at their own pace).
     */
    static SinkChannel open(Endpoint endpoint, StructType schema, ReactiveSinkWriter.SinkOptions o, long partition,
            long epoch, long task, long maxHoldNanos) throws IOException {
        Connection.Options c = new Connection.Options();
        c.connectTimeoutMs = o.connectTimeoutMs;
        c.keepaliveMs = o.keepaliveMs;
        c.lifetimeMs = o.keepaliveTimeoutMs;
        c.tls = o.tls;
        ChannelWriter w;
        try {
            w = ChannelWriter.open(endpoint, c, 16);
        } catch (IOException e) {
            if (!lost(e)) throw e;
            w = null; // unreachable now: the first send recovers (an outage from the start)
        }
        SinkChannel ch = new SinkChannel(w, endpoint, c, schema, o, partition, epoch, task, maxHoldNanos);
        ch.sender.start();
        TaskChunks.sinkOpened(task, ch.flusher);
        return ch;
    }

    private String where() {
        return "remote subscriber " + endpoint;
    }

    private ChannelWriter writer() throws IOException {
        lock.lock();
        try {
            if (writer == null) throw new ConnectionLostException(where() + ": not connected");
            return writer;
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code e} says the connection to the hub was lost (tried again), not what the hub answered. */
    static boolean lost(IOException e) {
        return !(e instanceof RemoteException || e instanceof ProtocolException || e instanceof TlsRefusedException
                || e instanceof java.io.InterruptedIOException);
    }

    /** Queue one row; blocks while {@code maxQueuedRows} rows wait; throws once the channel failed. */
    void add(Row row) throws IOException {
        InternalRow r = (InternalRow) toInternal.apply(row); // a new row each call: safe to queue
        // With our source in this task, rows go at the ends of its chunks, not as each comes, unless
        // holding them would add more than maxHoldNanos (asked per row: the source may open
        // after this channel).
        long now = System.nanoTime();
        boolean hold = TaskChunks.mayHold(task, now, maxHoldNanos);
        lock.lock();
        try {
            while (queue.size() >= o.maxQueuedRows && failure == null) {
                changed.signalAll(); // the sender may be waiting for the chunk's end
                changed.await();
            }
            if (failure != null) throw failure;
            if (queue.isEmpty()) heldSince = now;
            queue.addLast(r);
            if (!hold || now - heldSince >= maxHoldNanos
                    || queue.size() >= Math.min(o.maxRowsPerPayload, o.maxQueuedRows)) {
                changed.signalAll();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while the Subscriber of " + where() + " was busy");
        } finally {
            lock.unlock();
        }
    }

    /** Send what is queued (our source's chunk ended: see {@link TaskChunks}). */
    private void flush() {
        lock.lock();
        try {
            if (!queue.isEmpty()) changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The epoch's rows are all queued: send them, then the end, and wait until every row reached the Subscriber. */
    void finish() throws IOException {
        TaskChunks.sinkClosed(flusher);
        lock.lock();
        try {
            finishing = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            sender.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abort("interrupted");
            throw new java.io.InterruptedIOException("interrupted while sending the last rows to " + where());
        }
        try {
            if (failure != null) throw failure;
            while (true) {
                try {
                    // Once sent (or tried) the empty epoch's payload is retained: a recovery sends it again.
                    if (sent == 0 && retained.isEmpty() && !overflowed) sendEmptyEpoch();
                    ChannelWriter w = writer();
                    w.complete();
                    checkAnswer(w.awaitAnswers(TimeUnit.MILLISECONDS.toNanos(o.ackTimeoutMs)));
                    return;
                } catch (IOException e) {
                    if (!lost(e)) throw e;
                    recover(e);
                }
            }
        } finally {
            ChannelWriter w = writer;
            if (w != null) w.close();
            root.close();
        }
    }

    /** Stop: the hub drops what it holds of this channel (not yet delivered) and the task fails. */
    void abort(String why) {
        TaskChunks.sinkClosed(flusher);
        lock.lock();
        try {
            stopped = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        ChannelWriter w;
        lock.lock();
        try {
            w = writer;
        } finally {
            lock.unlock();
        }
        if (w != null) w.fail(why);
        try {
            sender.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        root.close();
    }

    private void sendLoop() {
        try {
            while (true) {
                try {
                    List<InternalRow> rows = nextRows();
                    if (rows == null) return;
                    send(rows);
                } catch (IOException e) {
                    if (!lost(e) || isStopped()) throw e;
                    recover(e); // the rows of a send that failed were retained: sent again
                }
            }
        } catch (IOException e) {
            fail(e);
        } catch (RuntimeException e) {
            fail(new IOException("encoding rows for " + where() + " failed: " + e, e));
        }
    }

    /** The rows of the next payload, within the hub's credit (null: nothing more to send). */
    private List<InternalRow> nextRows() throws IOException {
        lock.lock();
        try {
            while (queue.isEmpty() && !finishing && !stopped) changed.await();
            if (stopped || queue.isEmpty()) return null;
        } catch (InterruptedException e) {
            return null;
        } finally {
            lock.unlock();
        }
        long credit;
        ChannelWriter w = writer();
        while ((credit = w.awaitCredit(TimeUnit.MILLISECONDS.toNanos(200))) == 0) {
            if (isStopped()) return null;
        }
        if (credit < 0) { // the hub delivered this epoch before (an older attempt's): nothing to send
            lock.lock();
            try {
                queue.clear();
                changed.signalAll();
            } finally {
                lock.unlock();
            }
            return finishingAndEmpty() ? null : List.of();
        }
        lock.lock();
        try {
            int k = (int) Math.min(Math.min(queue.size(), credit), o.maxRowsPerPayload);
            List<InternalRow> out = new ArrayList<>(k);
            for (int i = 0; i < k; i++) out.add(queue.pollFirst());
            changed.signalAll();
            return out;
        } finally {
            lock.unlock();
        }
    }

    private boolean isStopped() {
        lock.lock();
        try {
            return stopped;
        } finally {
            lock.unlock();
        }
    }

    private boolean finishingAndEmpty() {
        lock.lock();
        try {
            return finishing && queue.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /**
     * An epoch without rows still names its partition and epoch to the hub, in one payload of 0 rows
     * (it costs the hub's side one credit): the hub settles that partition's ledger on it. Had an
     * earlier attempt of this epoch delivered rows, they are the first rows of the partition's next
     * epoch, and the hub must know so to skip them there. Not sent when the hub declined the epoch.
     */
    private void sendEmptyEpoch() throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(o.ackTimeoutMs);
        long credit;
        ChannelWriter w = writer();
        while ((credit = w.awaitCredit(TimeUnit.MILLISECONDS.toNanos(200))) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IOException(where() + " asked for nothing within ackTimeout=" + o.ackTimeoutMs
                        + " ms for the end of epoch " + epoch + "; the Subscriber requests too slowly, or raise ackTimeout");
            }
        }
        if (credit > 0) sendPayload(List.of());
    }

    private void send(List<InternalRow> rows) throws IOException {
        if (!rows.isEmpty()) sendPayload(rows);
    }

    private void sendPayload(List<InternalRow> rows) throws IOException {
        arrow.reset();
        for (InternalRow r : rows) arrow.write(r);
        arrow.finish();
        Map<String, String> meta = new HashMap<>();
        meta.put(META_BATCH, Long.toString(epoch));
        meta.put(META_START, Long.toString(sent));
        meta.put(META_TOTAL, Long.toString(sent + rows.size()));
        meta.put(META_OPEN, "1");
        meta.put(META_PARTITION, Long.toString(partition));
        List<FieldVector> vectors = root.getFieldVectors();
        VectorSchemaRoot tagged = new VectorSchemaRoot(new Schema(schema.getFields(), meta), vectors, rows.size());
        byte[] payload = ArrowPayloads.encode(tagged); // shares root's vectors: not closed here
        retain(payload, rows.size()); // first: a send that fails is sent again by recover
        sent += rows.size();
        writer().send(payload, rows.size());
    }

    /** Keep a payload sent in this epoch, for a new channel after a lost one (up to maxRetainedRows rows). */
    private void retain(byte[] payload, int rows) {
        if (overflowed) return;
        if (retainedRows + rows > o.maxRetainedRows) {
            overflowed = true;
            retained.clear();
            retainedRowCounts.clear();
            return;
        }
        retained.addLast(payload);
        retainedRowCounts.addLast(rows);
        retainedRows += rows;
    }

    /**
     * The connection to the hub was lost ({@code why}): open a new channel and send again every payload of
     * the epoch (the hub skips the rows it delivered), spaced by the backoff, for up to reconnectTimeout;
     * throws when it cannot (the task fails, as before, and Spark runs the epoch again).
     */
    private void recover(IOException why) throws IOException {
        if (overflowed) {
            throw new IOException(where() + ": the connection was lost after more than maxRetainedRows="
                    + o.maxRetainedRows + " rows of epoch " + epoch + " were sent, which cannot be sent again; the epoch "
                    + "fails and Spark runs it again (raise maxRetainedRows to ride out such outages): " + why.getMessage(),
                    why);
        }
        Outage outage = new Outage(where(), "sending the " + retainedRows + " rows of epoch " + epoch + " sent so far again",
                why, o.reconnectTimeoutMs, "option reconnectTimeout");
        while (true) {
            if (isStopped()) throw why;
            try {
                resend();
                outage.ended("sent epoch " + epoch + "'s rows again on a new channel");
                return;
            } catch (IOException e) {
                if (!lost(e)) throw e;
                outage.failed(e);
                if (outage.over()) {
                    outage.ended("gave up");
                    throw new IOException(where() + " was unreachable for reconnectTimeout=" + o.reconnectTimeoutMs
                            + " ms while writing epoch " + epoch + "; the epoch fails: " + e.getMessage(), e);
                }
                try {
                    TimeUnit.NANOSECONDS.sleep(outage.pauseNanos(o.backoffFirstMs, o.backoffMaxMs));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted while reconnecting to " + where());
                }
            }
        }
    }

    /** One try: a new channel, then every retained payload within its credits. */
    private void resend() throws IOException {
        ChannelWriter w = ChannelWriter.open(endpoint, connection, 16);
        ChannelWriter old;
        lock.lock();
        try {
            old = writer;
            writer = w;
        } finally {
            lock.unlock();
        }
        if (old != null) old.close();
        java.util.Iterator<Integer> counts = retainedRowCounts.iterator();
        for (byte[] payload : retained) {
            int rows = counts.next();
            long credit;
            while ((credit = w.awaitCredit(TimeUnit.MILLISECONDS.toNanos(200))) >= 0 && credit < Math.max(1, rows)) {
                if (isStopped()) throw new ConnectionLostException(where() + ": stopped while sending again");
            }
            if (credit < 0) return; // the hub took the epoch already (an older attempt's): nothing more to send
            w.send(payload, rows);
        }
    }

    private void fail(IOException e) {
        lock.lock();
        try {
            if (failure == null) failure = e;
            queue.clear();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The hub's answer: status, batch_id, rows, delivered (rs_spark/delivery/wire.py ACK_SCHEMA). */
    private void checkAnswer(List<byte[]> answers) throws IOException {
        if (answers.size() != 1) {
            throw new ProtocolException(where() + " answered " + answers.size() + " times, not once");
        }
        byte[] a = answers.get(0);
        try (VectorSchemaRoot r = ArrowPayloads.decode(a, 0, a.length, Feeds.allocator(), where())) {
            if (r.getRowCount() != 1 || !(r.getVector("status") instanceof VarCharVector)
                    || !(r.getVector("delivered") instanceof BigIntVector)) {
                throw new ProtocolException(where() + " answered with " + r.getSchema() + ", not the hub's acknowledgement");
            }
            String status = new String(((VarCharVector) r.getVector("status")).get(0), java.nio.charset.StandardCharsets.UTF_8);
            long delivered = ((BigIntVector) r.getVector("delivered")).get(0);
            if (status.equals("duplicate")) return; // an older epoch the hub had delivered: nothing was lost
            if (!status.equals("delivered") || delivered < sent) {
                throw new IOException(where() + " took " + delivered + " of the " + sent + " rows of epoch " + epoch
                        + " (" + status + "); the epoch fails and Spark runs it again");
            }
        }
    }
}
