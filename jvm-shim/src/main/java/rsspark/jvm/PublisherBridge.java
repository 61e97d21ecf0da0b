package rsspark.jvm;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Flow;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * JVM Publisher -> Python: subscribes to a {@link Flow.Publisher} and hands its elements to
 * Python as Arrow IPC batches, one batch per {@link #poll} call.
 *
 * <p>Demand-driven: Python's {@code request(n)} becomes {@link #request}, which requests
 * {@code n} upstream; nothing else requests, so this bridge buffers at most what was requested,
 * and an upstream that sends more fails with an error naming rule 1.1.
 *
 * <p>Threads: upstream signals on its threads; Python calls {@link #request}, {@link #cancel}
 * (serialised on one lock, rule 2.7) and {@link #poll} from its own.
 */
public final class PublisherBridge implements Flow.Subscriber<Object>, AutoCloseable {
    private final Flow.Publisher<?> source;
    private final Object lock = new Object(); // guards the buffer and the state below
    private final Object calls = new Object(); // serialises calls on the upstream Subscription (rule 2.7)
    private final BufferAllocator allocator;
    private Schema schema;
    private BatchEncoder encoder;

    private ArrayList<Object> buffer = new ArrayList<>();
    // Primitive fast path (one int64 column, Long elements): values stay unboxed here instead of
    // in buffer. Leaves for good (boxing what it holds into buffer) at the first other element.
    private boolean longMode;
    private long[] longs = new long[0];
    private int longCount;
    private long[] spareLongs; // the array the last poll encoded, reused by the next one
    private Flow.Subscription upstream;
    private long pendingRequest; // requested before onSubscribe arrived
    private long requested; // total requested upstream (saturating)
    private long received; // total onNext received
    private long delivered; // total rows handed to Python
    private boolean completed;
    private Throwable error;
    private boolean cancelled;
    private boolean started;
    private int waitingFor; // > 0: a poller waits until this many rows are buffered
    private boolean closed;

    public PublisherBridge(Object publisher, String schemaSpec) {
        this.source = Interop.toFlowPublisher(publisher);
        this.schema = schemaSpec == null || schemaSpec.isEmpty() ? null : Schemas.parse(schemaSpec);
        this.allocator = Memory.child("publisher-bridge");
        this.longMode = schema == null || isLongColumn(schema);
    }

    private static boolean isLongColumn(Schema s) {
        return s.getFields().size() == 1 && "int64".equals(Schemas.typeName(s.getFields().get(0).getType()));
    }

    private int size() { // holding lock
        return longMode ? longCount : buffer.size();
    }

    /** The schema's spec text; when none was given, declared by the first element's class (null before). */
    public String schema() {
        synchronized (lock) {
            return schema == null ? null : Schemas.format(schema);
        }
    }

    /** Subscribe upstream (once). */
    public void start() {
        synchronized (lock) {
            if (started) return;
            started = true;
        }
        source.subscribe(this);
    }

    /** Python demands {@code n} more elements; requested upstream at once (or on onSubscribe). */
    public void request(long n) {
        if (n <= 0) throw new IllegalArgumentException("request(" + n + "): rule 3.9 needs n > 0");
        synchronized (calls) {
            Flow.Subscription s;
            synchronized (lock) {
                if (cancelled || completed || error != null) return;
                requested = Demand.addCap(requested, n);
                s = upstream;
                if (s == null) {
                    pendingRequest = Demand.addCap(pendingRequest, n);
                    return;
                }
            }
            s.request(n);
        }
    }

    /** Stop: cancel upstream, drop the buffer, wake a poller. Idempotent. */
    public void cancel() {
        synchronized (calls) {
            Flow.Subscription s;
            synchronized (lock) {
                if (cancelled) return;
                cancelled = true;
                s = upstream;
                buffer = new ArrayList<>();
                longs = new long[0];
                longCount = 0;
                spareLongs = null;
                lock.notifyAll();
            }
            if (s != null) s.cancel();
        }
    }

    /**
     * Up to {@code maxRows} buffered elements as one Arrow IPC stream. Waits up to {@code timeoutMs}
     * for a first element, then for {@code maxRows} (or everything requested, or a terminal
     * signal) while elements keep coming: the batch leaves once no element arrived for
     * {@code lingerMs}, or {@code maxLingerMs} after its first element. Returns null when nothing
     * arrived in time, an empty array when the stream has ended and nothing is left (see
     * {@link #state}).
     */
    public byte[] poll(int maxRows, long timeoutMs, long lingerMs, long maxLingerMs) throws InterruptedException {
        Taken t = take(maxRows, timeoutMs, lingerMs, maxLingerMs);
        if (t == null) return null;
        if (t == Taken.END) return new byte[0];
        if (t.longs() != null) {
            byte[] b = encoder.encodeLongs(t.longs(), t.n());
            giveBack(t.longs());
            return b;
        }
        try {
            return encoder.encode(t.items(), 0, t.items().size(), t.first());
        } catch (BatchEncoder.EncodeException e) {
            fail(e);
            byte[] prefix = encoder.takeEncodedPrefix();
            return prefix != null ? prefix : new byte[0];
        }
    }

    /** {@link #poll(int, long, long, long)} with {@code maxLingerMs = lingerMs} (a fixed linger). */
    public byte[] poll(int maxRows, long timeoutMs, long lingerMs) throws InterruptedException {
        return poll(maxRows, timeoutMs, lingerMs, lingerMs);
    }

    /**
     * As {@link #poll}, but writes the IPC stream into the file {@code path} (best on a tmpfs such
     * as /dev/shm; created, or truncated) and returns its length: -1 when nothing arrived in time,
     * 0 at the end. Saves py4j's base64 text encoding of byte[]; Int64 columns are written
     * straight from a {@code long[]} into the file.
     */
    public long pollInto(String path, int maxRows, long timeoutMs, long lingerMs, long maxLingerMs)
            throws InterruptedException, IOException {
        Taken t = take(maxRows, timeoutMs, lingerMs, maxLingerMs);
        if (t == null) return -1;
        if (t == Taken.END) return 0;
        try (FileChannel ch = openExclusive(Path.of(path))) {
            if (t.longs() != null) {
                encoder.encodeLongs(t.longs(), t.n(), ch);
                giveBack(t.longs());
            } else {
                try {
                    encoder.encode(t.items(), 0, t.items().size(), t.first(), ch);
                } catch (BatchEncoder.EncodeException e) {
                    fail(e); // what was written is the prefix before the bad element (maybe nothing)
                }
            }
            return ch.position();
        }
    }

    /**
     * A new file, created exclusively (an existing file or link at the path is an error, links are
     * not followed) and private (0600 where the file system has POSIX permissions).
     */
    private static FileChannel openExclusive(Path path) throws IOException {
        Set<OpenOption> options = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS);
        try {
            return FileChannel.open(path, options, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) { // no POSIX permissions here: the folder is the protection
            return FileChannel.open(path, options);
        }
    }

    public long pollInto(String path, int maxRows, long timeoutMs, long lingerMs) throws InterruptedException, IOException {
        return pollInto(path, maxRows, timeoutMs, lingerMs, lingerMs);
    }

    /** What {@link #take} took out of the buffer: boxed elements, or {@code n} unboxed longs. */
    private record Taken(List<Object> items, long[] longs, int n, long first) {
        static final Taken END = new Taken(null, null, 0, 0);
    }

    private Taken take(int maxRows, long timeoutMs, long lingerMs, long maxLingerMs) throws InterruptedException {
        if (maxRows <= 0) throw new IllegalArgumentException("maxRows=" + maxRows + ": must be > 0");
        long lingerNs = Math.max(0, lingerMs) * 1_000_000L;
        long maxLingerNs = Math.max(lingerNs, maxLingerMs * 1_000_000L);
        synchronized (lock) {
            long now = System.nanoTime();
            long deadline = now + timeoutMs * 1_000_000L;
            long firstAt = Long.MIN_VALUE; // when this batch's first element was seen
            long lingerEnd = Long.MAX_VALUE;
            int seen = 0; // buffered size at the last look: growth moves lingerEnd on
            while (true) {
                int size = size();
                boolean ended = cancelled || completed || error != null;
                if (size >= maxRows || (size > 0 && (ended || received == requested))) break;
                if (size == 0 && ended) return Taken.END;
                if (size > 0) {
                    if (firstAt == Long.MIN_VALUE) firstAt = now;
                    if (size != seen) { // still arriving: wait for a quiet lingerMs, up to maxLingerMs in all
                        seen = size;
                        lingerEnd = Math.min(now + lingerNs, firstAt + maxLingerNs);
                    }
                }
                long until = Math.min(deadline, lingerEnd);
                if (now >= until) {
                    if (size == 0) return null;
                    break;
                }
                waitingFor = size == 0 ? 1 : maxRows;
                long waitNs = until - now;
                lock.wait(waitNs / 1_000_000L, (int) (waitNs % 1_000_000L));
                waitingFor = 0;
                now = System.nanoTime();
            }
            long first = delivered;
            if (encoder == null) {
                if (schema == null) schema = Schemas.of(longMode ? Long.class : buffer.get(0).getClass());
                encoder = new BatchEncoder(schema, allocator);
                if (longMode && !encoder.takesLongs()) unbox();
            }
            if (longMode) {
                int n = Math.min(longCount, maxRows);
                long[] out = longs;
                if (n == longCount) {
                    long[] spare = spareLongs;
                    spareLongs = null;
                    longs = spare != null && spare.length >= Math.min(out.length, 1 << 16) ? spare
                            : new long[Math.min(out.length, 1 << 16)];
                } else {
                    out = Arrays.copyOf(longs, n);
                    System.arraycopy(longs, n, longs, 0, longCount - n);
                }
                longCount -= n;
                delivered += n;
                return new Taken(null, out, n, first);
            }
            List<Object> batch;
            if (buffer.size() <= maxRows) {
                batch = buffer;
                buffer = new ArrayList<>(Math.min(Math.max(16, batch.size()), 1 << 16));
            } else {
                List<Object> head = buffer.subList(0, maxRows);
                batch = new ArrayList<>(head);
                head.clear();
            }
            delivered += batch.size();
            return new Taken(batch, null, batch.size(), first);
        }
    }

    private void giveBack(long[] a) {
        synchronized (lock) {
            if (!cancelled && (spareLongs == null || a.length > spareLongs.length)) spareLongs = a;
        }
    }

    /** Leave the long fast path for good: box what it holds, in order, into buffer (holding lock). */
    private void unbox() {
        if (!longMode) return;
        longMode = false;
        ArrayList<Object> b = new ArrayList<>(Math.max(16, longCount));
        for (int i = 0; i < longCount; i++) b.add(longs[i]);
        buffer = b;
        longs = null;
        spareLongs = null;
        longCount = 0;
    }

    /** {@code open}, {@code complete}, {@code cancelled} or {@code error}. */
    public String state() {
        synchronized (lock) {
            if (error != null) return "error";
            if (completed) return "complete";
            if (cancelled) return "cancelled";
            return "open";
        }
    }

    /** The upstream's (or this bridge's) error as {@code class: message}, or null. */
    public String errorText() {
        synchronized (lock) {
            return error == null ? null : error.getClass().getName() + ": " + error.getMessage();
        }
    }

    public Throwable error() {
        synchronized (lock) {
            return error;
        }
    }

    /** Elements buffered here, not yet polled. */
    public int buffered() {
        synchronized (lock) {
            return size();
        }
    }

    /** Requested upstream and not yet received. */
    public long outstanding() {
        synchronized (lock) {
            return requested == Long.MAX_VALUE ? Long.MAX_VALUE : requested - received;
        }
    }

    public long received() {
        synchronized (lock) {
            return received;
        }
    }

    private void fail(Throwable t) {
        Flow.Subscription s;
        synchronized (lock) {
            if (error != null) return;
            error = t; // an element we cannot encode fails the stream even after the upstream completed
            s = cancelled || completed ? null : upstream;
            lock.notifyAll();
        }
        if (s != null) {
            synchronized (calls) {
                s.cancel();
            }
        }
    }

    // -- Flow.Subscriber: the upstream's signals ---------------------------------------

    @Override
    public void onSubscribe(Flow.Subscription s) {
        if (s == null) throw new NullPointerException("onSubscribe(null) (rule 2.13)");
        synchronized (calls) {
            long pending;
            boolean reject;
            synchronized (lock) {
                reject = upstream != null || cancelled;
                if (!reject) upstream = s;
                pending = pendingRequest;
                pendingRequest = 0;
            }
            if (reject) {
                s.cancel(); // rule 2.5: a second subscription (or one after cancel) is cancelled
                return;
            }
            if (pending > 0) s.request(pending);
        }
    }

    @Override
    public void onNext(Object item) {
        if (item == null) throw new NullPointerException("onNext(null) (rule 2.13)");
        synchronized (lock) {
            if (cancelled || error != null) return; // rule 2.8: may still arrive after cancel
            if (completed) {
                violation("1.7", "onNext after onComplete");
                return;
            }
            if (received == requested) {
                violation("1.1", "the publisher sent element #" + (received + 1) + " but only " + requested
                        + " were requested");
                return;
            }
            int size;
            if (longMode) {
                if (item.getClass() == Long.class) {
                    if (longCount == longs.length) longs = Arrays.copyOf(longs, Math.max(1024, longCount * 2));
                    longs[longCount++] = (Long) item;
                    size = longCount;
                } else {
                    unbox();
                    buffer.add(item);
                    size = buffer.size();
                }
            } else {
                buffer.add(item);
                size = buffer.size();
            }
            received++;
            int w = waitingFor;
            if (w > 0 && (size >= w || received == requested)) lock.notifyAll();
        }
    }

    private void violation(String rule, String what) {
        // Called holding lock; the upstream is cancelled without it.
        error = new IllegalStateException("rule " + rule + " violated by " + source.getClass().getName() + ": " + what);
        lock.notifyAll();
        Flow.Subscription s = upstream;
        new Thread(() -> {
            synchronized (calls) {
                s.cancel();
            }
        }, "rs-spark-cancel").start();
    }

    @Override
    public void onError(Throwable t) {
        if (t == null) throw new NullPointerException("onError(null) (rule 2.13)");
        synchronized (lock) {
            if (error == null && !completed) error = t;
            lock.notifyAll();
        }
    }

    @Override
    public void onComplete() {
        synchronized (lock) {
            if (error == null) completed = true;
            lock.notifyAll();
        }
    }

    @Override
    public void close() {
        cancel();
        synchronized (lock) {
            if (closed) return;
            closed = true;
            if (encoder != null) encoder.close();
        }
        allocator.close();
    }
}
