package rsspark.rt;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

import rsspark.jvm.BatchEncoder;
import rsspark.jvm.Demand;
import rsspark.jvm.Factories;
import rsspark.jvm.Interop;
import rsspark.rsocket.ProtocolException;

/**
 * A JVM Publisher ({@code jvmPublisher}) read in this JVM. A JVM publisher cannot replay, so its
 * rows are kept here, numbered by stream position, until Spark commits them ({@link #acknowledge}),
 * bounded by {@code maxBufferedRecords}: a batch's task that ends (its batch is over, or it failed)
 * leaves the subscription in place, and the next task of the query continues it at Spark's offset,
 * replaying kept rows when a failed attempt is retried. Demand: at most {@code maxInFlight} rows
 * requested beyond what the reader took, and never more than the kept-rows bound allows.
 *
 * <p>This holds within one JVM: after the JVM restarts, the publisher is subscribed anew and its
 * rows are numbered on from the checkpoint's offset (what it emitted before is not replayed). A
 * subscription no task continues within {@code resumeWindow} (default 60 s) is cancelled.
 */
final class JvmFeed implements RowFeed {
    private static final ConcurrentHashMap<String, LocalStream> STREAMS = new ConcurrentHashMap<>();
    private static final ScheduledExecutorService TIMERS = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "rs-spark-jvm-feed-expiry");
        t.setDaemon(true);
        return t;
    });

    private final LocalStream stream;
    private final Object token;
    private final String run;

    private JvmFeed(LocalStream stream, Object token, String run) {
        this.stream = stream;
        this.token = token;
        this.run = run;
    }

    /**
     * The subscription of stream {@code key} in this JVM: the live one (a later batch, a retried task
     * or a restarted query continue it), or a new one from {@code position}. A subscription cancelled
     * by query run {@code run} stays cancelled for that run: a task of a stopping query that starts
     * after the cancel fails instead of subscribing anew.
     */
    static JvmFeed open(RtOptions o, StructType schema, String key, String run, long position, long ack)
            throws IOException {
        LocalStream s = STREAMS.compute(key, (k, old) -> old != null && (!old.isCancelled() || run.equals(old.cancelledBy()))
                ? old : new LocalStream(o, schema, k, position));
        Object token = s.attach(position);
        JvmFeed f = new JvmFeed(s, token, run);
        if (ack > 0) f.acknowledge(ack);
        return f;
    }

    /** Cancel the subscription of stream {@code key} in this JVM, if there is one (the query run {@code run} stops). */
    static void cancelIfPresent(String key, String run) {
        LocalStream s = STREAMS.get(key);
        if (s != null) s.cancel(run);
    }

    @Override
    public Chunk poll(long timeoutNanos) throws IOException {
        return stream.poll(token, timeoutNanos);
    }

    @Override
    public boolean isComplete() {
        return stream.isComplete(token);
    }

    @Override
    public void acknowledge(long position) {
        stream.acknowledge(position);
    }

    @Override
    public void cancel() {
        stream.cancel(run);
    }

    @Override
    public void detach() {
        stream.detach(token);
    }

    @Override
    public String where() {
        return stream.where;
    }

    /** Kept rows from {@code position} on: one chunk (a JVM publisher's elements as the query's rows). */
    private enum State { ACTIVE, COMPLETE, FAILED, CANCELLED }

    /** One subscription to a JVM publisher in this JVM, shared by the successive tasks of a query. */
    private static final class LocalStream implements Flow.Subscriber<Object> {
        final String where;
        private final String key;
        private final RtOptions o;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition changed = lock.newCondition();
        private final ArrayDeque<KeptChunk> kept = new ArrayDeque<>();
        private final List<Object> pending = new ArrayList<>(); // received, not yet converted
        private final BatchEncoder encoder;
        private final ArrowRows decoder;
        private Flow.Subscription subscription;
        private State state = State.ACTIVE;
        private Throwable error;
        private long base; // position of the first kept row
        private long converted; // position after the last converted row (== end of `kept`)
        private long received; // position after the last element received
        private long requested; // position up to which elements were requested
        private long cursor; // the reader's next position
        private Object reader; // the attached reader's token (null: none)
        private ScheduledFuture<?> expiry;
        private String cancelledBy; // the query run that cancelled it (null: expired, or not cancelled)

        LocalStream(RtOptions o, StructType schema, String key, long position) {
            this.o = o;
            this.key = key;
            this.where = "JVM publisher " + o.jvmPublisher;
            this.base = this.converted = this.received = this.requested = this.cursor = position;
            org.apache.arrow.vector.types.pojo.Schema arrow = ArrowUtils.toArrowSchema(schema, "UTC", true);
            try {
                this.encoder = new BatchEncoder(arrow, Feeds.allocator());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + ": the schema " + schema.toDDL() + " has a column type the JVM "
                        + "publisher path cannot fill (" + e.getMessage() + "); use BOOLEAN, TINYINT, SMALLINT, INT, "
                        + "BIGINT, FLOAT, DOUBLE, STRING, BINARY, TIMESTAMP, TIMESTAMP_NTZ, DATE or DECIMAL(p,s) "
                        + "columns (ARRAY, MAP, STRUCT and intervals are not carried)", e);
            }
            this.decoder = new ArrowRows(schema, Feeds.allocator(), where);
            try {
                Object p = Factories.publisher(o.jvmPublisher, o.factoryOptions);
                Interop.toFlowPublisher(p).subscribe(this);
            } catch (RuntimeException | Error e) {
                encoder.close(); // its Arrow buffers: nobody else will release them
                throw e;
            }
        }

        // -- the publisher's side ---------------------------------------------------------------
        @Override
        public void onSubscribe(Flow.Subscription s) {
            lock.lock();
            try {
                if (subscription != null) { // rule 2.5: a second subscription is cancelled
                    s.cancel();
                    return;
                }
                subscription = s;
            } finally {
                lock.unlock();
            }
            topUp();
        }

        @Override
        public void onNext(Object item) {
            lock.lock();
            try {
                if (state != State.ACTIVE) return;
                if (item == null) {
                    failLocked(new NullPointerException(where + " signalled a null element (rule 2.13)"));
                } else if (received >= requested) {
                    failLocked(new IllegalStateException(where + " sent more elements than were requested: element "
                            + received + " against demand up to " + requested + " (rule 1.1)"));
                } else {
                    pending.add(item);
                    received++;
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void onError(Throwable t) {
            lock.lock();
            try {
                failLocked(t == null ? new NullPointerException(where + " signalled onError(null) (rule 2.13)") : t);
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void onComplete() {
            lock.lock();
            try {
                if (state == State.ACTIVE) state = State.COMPLETE;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        private void failLocked(Throwable t) {
            if (state != State.ACTIVE && state != State.COMPLETE) return;
            state = State.FAILED;
            error = t;
            changed.signalAll();
        }

        // -- readers ----------------------------------------------------------------------------
        Object attach(long position) throws IOException {
            Object token = new Object();
            lock.lock();
            try {
                if (state == State.CANCELLED) throw new IOException(where + " was cancelled: the query is stopping");
                if (expiry != null) expiry.cancel(false);
                convertLocked();
                if (position < base || position > converted) {
                    throw new IOException(where + " keeps rows " + base + ".." + converted + " in this JVM; Spark asks for "
                            + "position " + position + ". A JVM publisher cannot replay rows this JVM no longer holds "
                            + "(it restarted, or they were committed); start the query from a new checkpointLocation");
                }
                cursor = position;
                reader = token; // a newer reader (a retried task) takes over from an older one
                changed.signalAll();
            } finally {
                lock.unlock();
            }
            topUp();
            return token;
        }

        Chunk poll(Object token, long timeoutNanos) throws IOException {
            long deadline = System.nanoTime() + timeoutNanos;
            Chunk out;
            lock.lock();
            try {
                while (true) {
                    check(token);
                    convertLocked();
                    out = takeLocked();
                    if (out != null) break;
                    if (state == State.FAILED) {
                        throw new IOException(where + " failed after " + received + " elements: " + error, error);
                    }
                    if (state != State.ACTIVE) return null;
                    long left = deadline - System.nanoTime();
                    if (left <= 0) return null;
                    changed.awaitNanos(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while waiting for " + where);
            } finally {
                lock.unlock();
            }
            topUp();
            return out;
        }

        private void check(Object token) throws IOException {
            if (state == State.CANCELLED) throw new IOException(where + " was cancelled");
            if (reader != token) throw new IOException(where + ": a newer task of the query took over this stream");
        }

        /** The kept rows from the cursor on, up to the end of the chunk the cursor is in (null: none yet). */
        private Chunk takeLocked() {
            for (KeptChunk e : kept) {
                if (e.end() <= cursor) continue;
                int from = (int) (cursor - e.position());
                cursor = e.end();
                return from == 0 ? e.chunk() : new Chunk(e.chunk().rows().subList(from, e.chunk().size()));
            }
            return null;
        }

        /** Turn the pending elements into rows (one chunk), kept from position {@code converted}. */
        private void convertLocked() throws IOException {
            if (pending.isEmpty()) return;
            try {
                byte[] ipc = encoder.encode(pending, 0, pending.size(), converted);
                Chunk c = decoder.decode(ipc, 0, ipc.length);
                kept.addLast(new KeptChunk(converted, c));
                converted += c.size();
                pending.clear();
            } catch (BatchEncoder.EncodeException e) {
                failLocked(e); // the query fails with it (FAILFAST); the publisher is cancelled (rule 2.13-like)
                pending.clear();
                if (subscription != null) subscription.cancel();
                throw new IOException(where + ": " + e.getMessage(), e);
            } catch (ProtocolException e) {
                throw new IllegalStateException("the shim's own Arrow did not validate: " + e.getMessage(), e);
            }
        }

        boolean isComplete(Object token) {
            lock.lock();
            try {
                return reader == token && state == State.COMPLETE && pending.isEmpty() && cursor >= converted;
            } finally {
                lock.unlock();
            }
        }

        void acknowledge(long position) {
            lock.lock();
            try {
                while (!kept.isEmpty() && kept.peekFirst().end() <= position) {
                    base = kept.pollFirst().end();
                }
            } finally {
                lock.unlock();
            }
            topUp();
        }

        /** Request what the bounds allow: reader within maxInFlight, kept rows within maxBufferedRecords. */
        private void topUp() {
            Flow.Subscription s;
            long n;
            lock.lock();
            try {
                s = subscription;
                long target = Math.min(Demand.addCap(cursor, o.maxInFlight), Demand.addCap(base, o.maxBufferedRecords));
                n = target - requested;
                if (s == null || state != State.ACTIVE || n <= 0) return;
                requested = target;
            } finally {
                lock.unlock();
            }
            s.request(n);
        }

        void detach(Object token) {
            lock.lock();
            try {
                if (reader != token) return;
                reader = null;
                if (state == State.CANCELLED) return;
                long windowMs = o.resumeWindow > 0 ? (long) (o.resumeWindow * 1000) : 60_000;
                expiry = TIMERS.schedule(this::expire, windowMs, TimeUnit.MILLISECONDS);
            } finally {
                lock.unlock();
            }
        }

        private void expire() {
            lock.lock();
            try {
                if (reader != null || state == State.CANCELLED) return;
            } finally {
                lock.unlock();
            }
            cancel(null);
        }

        boolean isCancelled() {
            lock.lock();
            try {
                return state == State.CANCELLED;
            } finally {
                lock.unlock();
            }
        }

        String cancelledBy() {
            lock.lock();
            try {
                return cancelledBy;
            } finally {
                lock.unlock();
            }
        }

        /** Cancel for query run {@code run} (kept as a tombstone for that run), or, with null, expire (forgotten). */
        void cancel(String run) {
            lock.lock();
            try {
                if (state != State.CANCELLED) cancelledBy = run;
                cancelLocked();
            } finally {
                lock.unlock();
            }
            if (run == null) STREAMS.remove(key, this);
        }

        private void cancelLocked() {
            Flow.Subscription s = subscription;
            boolean active = state == State.ACTIVE;
            // A cancelled stream converts nothing more (pending is cleared and onNext ignores what
            // comes): its encoder's Arrow buffers are released now, once, or never.
            if (state != State.CANCELLED) encoder.close();
            state = State.CANCELLED;
            kept.clear();
            pending.clear();
            changed.signalAll();
            if (s != null && active) s.cancel(); // under the lock: cancel is non-blocking (rule 3.5)
        }
    }
}
