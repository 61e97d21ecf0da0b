package rsspark.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.arrow.memory.BufferAllocator;

/**
 * Python -> JVM: a unicast {@link Flow.Publisher} that Python feeds with Arrow IPC batches.
 *
 * <p>Its JVM Subscriber's {@code request(n)} is reported to Python ({@link #awaitDemand},
 * and the return value of {@link #offer}); Python requests that much from its own Publisher and
 * offers what arrives. Elements are delivered in one serial drain loop (rules 1.3, 3.3), never
 * more than requested (rule 1.1); a terminal signal follows the queued elements.
 */
public final class FeedPublisher implements Flow.Publisher<Object>, AutoCloseable {
    /** A failure of the Python side, as {@code python.type: message}. */
    public static final class PythonException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public PythonException(String message) {
            super(message);
        }
    }

    private final BatchDecoder decoder;
    private final BufferAllocator allocator;
    private final ConcurrentLinkedQueue<Object> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicBoolean subscribed = new AtomicBoolean();
    private final AtomicLong requested = new AtomicLong();
    private final Object lock = new Object(); // for awaitDemand's wait/notify and 'reported'
    private final Subscription subscription = new Subscription();
    private volatile Flow.Subscriber<Object> subscriber;
    private volatile boolean cancelled;
    private volatile boolean complete;
    private volatile Throwable failure;
    private volatile long badRequest;
    private volatile boolean bad;
    private volatile boolean demandWaiter;
    private long emitted; // drain owner only
    private volatile boolean done; // written by the drain owner only
    private long reported; // under lock
    private long offered;

    public FeedPublisher(String elementKind) {
        this.allocator = Memory.child("feed-publisher");
        this.decoder = new BatchDecoder(elementKind, allocator);
    }

    @Override
    public void subscribe(Flow.Subscriber<? super Object> s) {
        if (s == null) throw new NullPointerException("subscribe(null) (rule 1.9)");
        Flow.Subscriber<Object> sub = s; // `? super Object` is Object
        if (!subscribed.compareAndSet(false, true)) {
            // Unicast: rule 1.9 still wants onSubscribe first, then the error.
            sub.onSubscribe(new Flow.Subscription() {
                public void request(long n) {}
                public void cancel() {}
            });
            sub.onError(new IllegalStateException("this rs_spark FeedPublisher is unicast and already has a subscriber"));
            return;
        }
        // The drain sees the subscriber only once onSubscribe has returned (rule 1.3): a request(n)
        // made inside onSubscribe wakes the feeder, whose offer() drains at once on its own thread.
        try {
            sub.onSubscribe(subscription);
        } catch (Throwable t) { // rule 2.13: consider the subscription cancelled
            Fatal.throwIfFatal(t);
            cancelled = true;
        }
        subscriber = sub;
        synchronized (lock) {
            lock.notifyAll();
        }
        drain();
    }

    // -- Python side --------------------------------------------------------------------

    /** True once a Subscriber subscribed. */
    public boolean isSubscribed() {
        return subscribed.get();
    }

    public boolean isCancelled() {
        return cancelled;
    }

    /**
     * Waits up to {@code timeoutMs} for new demand; returns it (saturating at Long.MAX_VALUE),
     * 0 when none came, -1 once the Subscriber cancelled (or the stream ended).
     */
    public long awaitDemand(long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        synchronized (lock) {
            demandWaiter = true; // before reading the demand: request() then sees it and notifies
            try {
                while (true) {
                    long d = takeDemandLocked();
                    if (d != 0) return d;
                    long left = deadline - System.nanoTime();
                    if (left <= 0) return 0;
                    lock.wait(Math.max(1, left / 1_000_000L));
                }
            } finally {
                demandWaiter = false;
            }
        }
    }

    private long takeDemandLocked() {
        if (cancelled || bad || done) return -1;
        long r = requested.get();
        if (r == reported) return 0;
        long d = r == Long.MAX_VALUE ? Long.MAX_VALUE : r - reported;
        reported = r;
        return d;
    }

    /** Queue the rows of an Arrow IPC stream and deliver within demand; returns new demand (see awaitDemand). */
    public long offer(byte[] ipc) {
        if (cancelled) return -1;
        List<Object> rows = new ArrayList<>();
        decoder.decode(ipc, rows);
        offered += rows.size();
        queue.addAll(rows);
        drain();
        synchronized (lock) {
            return takeDemandLocked();
        }
    }

    /** Rows offered so far. */
    public long offered() {
        return offered;
    }

    /** Elements queued here beyond what the Subscriber has taken. */
    public int queued() {
        return queue.size();
    }

    public void complete() {
        complete = true;
        drain();
    }

    public void error(String message) {
        if (failure == null) failure = new PythonException(message);
        drain();
    }

    @Override
    public void close() {
        cancelled = true;
        drain();
        allocator.close();
    }

    // -- the serial drain ---------------------------------------------------------------

    private void drain() {
        if (wip.getAndIncrement() != 0) return;
        int missed = 1;
        while (true) {
            Flow.Subscriber<Object> s = subscriber;
            if (!done && s != null) {
                if (cancelled) {
                    finish();
                } else if (bad) {
                    long n = badRequest;
                    finish();
                    cancelled = true;
                    signalError(s, Demand.invalid(n)); // rule 3.9
                } else {
                    long r = requested.get();
                    long e = emitted;
                    while (e != r && !cancelled) {
                        Object o = queue.poll();
                        if (o == null) break;
                        e++;
                        try {
                            s.onNext(o);
                        } catch (Throwable t) { // rule 2.13: the subscriber broke; cancel
                            Fatal.throwIfFatal(t);
                            cancelled = true;
                            emitted = e;
                            finish();
                            break;
                        }
                    }
                    emitted = e;
                    if (!done && !cancelled && queue.isEmpty()) {
                        Throwable f = failure;
                        if (f != null) {
                            finish();
                            signalError(s, f);
                        } else if (complete) {
                            finish();
                            try {
                                s.onComplete();
                            } catch (Throwable t) { // rule 2.13
                                Fatal.throwIfFatal(t);
                            }
                        }
                    }
                }
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) return;
        }
    }

    private void finish() {
        done = true;
        subscriber = null; // rule 3.13
        queue.clear();
        synchronized (lock) {
            lock.notifyAll();
        }
    }

    private static void signalError(Flow.Subscriber<Object> s, Throwable t) {
        try {
            s.onError(t);
        } catch (Throwable broken) { // rule 2.13
            Fatal.throwIfFatal(broken);
        }
    }

    private final class Subscription implements Flow.Subscription {
        @Override
        public void request(long n) {
            if (n <= 0) {
                if (!bad) {
                    badRequest = n;
                    bad = true;
                }
                drain();
                return;
            }
            requested.getAndAccumulate(n, Demand::addCap); // rule 3.17
            if (demandWaiter) {
                synchronized (lock) {
                    lock.notifyAll();
                }
            }
            drain();
        }

        @Override
        public void cancel() {
            cancelled = true; // rules 3.5, 3.7: idempotent
            drain();
        }
    }
}
