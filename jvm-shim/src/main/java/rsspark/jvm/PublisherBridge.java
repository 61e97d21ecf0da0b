package rsspark.jvm;

import java.util.ArrayList;
import java.util.List;
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
                lock.notifyAll();
            }
            if (s != null) s.cancel();
        }
    }

    /**
     * Up to {@code maxRows} buffered elements as one Arrow IPC stream. Waits up to {@code timeoutMs}
     * for a first element, then up to {@code lingerMs} more for {@code maxRows} (or for everything
     * requested, or a terminal signal). Returns null when nothing arrived in time, an empty array
     * when the stream has ended and nothing is left (see {@link #state}).
     */
    public byte[] poll(int maxRows, long timeoutMs, long lingerMs) throws InterruptedException {
        List<Object> batch;
        long first;
        synchronized (lock) {
            long now = System.nanoTime();
            long deadline = now + timeoutMs * 1_000_000L;
            long lingerEnd = Long.MAX_VALUE;
            while (true) {
                int size = buffer.size();
                boolean ended = cancelled || completed || error != null;
                if (size >= maxRows || (size > 0 && (ended || received == requested))) break;
                if (size == 0 && ended) return new byte[0];
                if (size > 0 && lingerEnd == Long.MAX_VALUE) lingerEnd = now + lingerMs * 1_000_000L;
                long until = Math.min(deadline, lingerEnd);
                if (now >= until) {
                    if (size == 0) return null;
                    break;
                }
                waitingFor = size == 0 ? 1 : maxRows;
                long ms = Math.max(1, (until - now) / 1_000_000L);
                lock.wait(ms);
                waitingFor = 0;
                now = System.nanoTime();
            }
            if (buffer.size() <= maxRows) {
                batch = buffer;
                buffer = new ArrayList<>(Math.min(Math.max(16, batch.size()), 1 << 16));
            } else {
                List<Object> head = buffer.subList(0, maxRows);
                batch = new ArrayList<>(head);
                head.clear();
            }
            first = delivered;
            delivered += batch.size();
            if (encoder == null) {
                if (schema == null) schema = Schemas.of(batch.get(0).getClass());
                encoder = new BatchEncoder(schema, allocator);
            }
        }
        try {
            return encoder.encode(batch, 0, batch.size(), first);
        } catch (BatchEncoder.EncodeException e) {
            fail(e);
            byte[] prefix = encoder.takeEncodedPrefix();
            return prefix != null ? prefix : new byte[0];
        }
    }

    /**
     * As {@link #poll}, but writes the IPC stream into the file {@code path} (best on a tmpfs such
     * as /dev/shm) and returns its length: -1 when nothing arrived in time, 0 at the end. Saves
     * py4j's base64 text encoding of byte[] for large batches.
     */
    public long pollInto(String path, int maxRows, long timeoutMs, long lingerMs) throws InterruptedException, java.io.IOException {
        byte[] b = poll(maxRows, timeoutMs, lingerMs);
        if (b == null) return -1;
        if (b.length == 0) return 0;
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(java.nio.file.Path.of(path),
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE,
                java.nio.file.StandardOpenOption.TRUNCATE_EXISTING)) {
            java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b);
            while (buf.hasRemaining()) ch.write(buf);
        }
        return b.length;
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
            return buffer.size();
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
            buffer.add(item);
            received++;
            int w = waitingFor;
            if (w > 0 && (buffer.size() >= w || received == requested)) lock.notifyAll();
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
