package rsspark.rsocket;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Feeds a Subscriber served by rs_spark.net with request-channel: payloads out only within the
 * credits the server grants (REQUEST_N; with the Arrow codec they count rows), the server's
 * answers in (the rs_spark sink hub answers once, when every row reached its Subscriber).
 *
 * <p>The channel opens with the route only (rs_spark.net's {@code ChannelOpen.ROUTE_ONLY}): every
 * element travels as PAYLOAD, after the server asked for it.
 */
public final class ChannelWriter implements AutoCloseable {
    private static final int STREAM_ID = 1;

    private enum State { OPEN, SENT_COMPLETE, ANSWERED, FAILED, CLOSED }

    private final Connection conn;
    private final String where;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final List<byte[]> answers = new ArrayList<>();
    private final int maxAnswers;
    private State state = State.OPEN;
    private IOException failure;
    private long credits; // rows the server asked for and we have not sent
    private boolean cancelled; // the server wants no more payloads (its answer may still come)
    private long sent;

    private ChannelWriter(Endpoint endpoint, Connection.Options options, int maxAnswers) throws IOException {
        this.where = "remote subscriber " + endpoint;
        this.maxAnswers = maxAnswers;
        this.conn = Connection.dial(endpoint, options, new Listener());
    }

    /** Connect, authenticate and open the channel; {@code maxAnswers} is the credit given to the server's answers. */
    public static ChannelWriter open(Endpoint endpoint, Connection.Options options, int maxAnswers) throws IOException {
        ChannelWriter w = new ChannelWriter(endpoint, options, maxAnswers);
        w.conn.send(Frames.setup(options.keepaliveMs, options.lifetimeMs, Metadata.COMPOSITE, Metadata.ARROW_MIME,
                Metadata.setup(endpoint.token, List.of()), null));
        w.conn.start();
        w.conn.send(Frames.request(Frames.REQUEST_CHANNEL, STREAM_ID, maxAnswers, Metadata.route(endpoint.name)));
        return w;
    }

    public String where() {
        return where;
    }

    /** Rows sent so far. */
    public long sent() {
        lock.lock();
        try {
            return sent;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Wait up to {@code timeoutNanos} for credit; the credit available (0 on timeout). Throws when
     * the channel failed; -1 when the server wants no more payloads (it cancelled its side, or
     * answered already).
     */
    public long awaitCredit(long timeoutNanos) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        lock.lock();
        try {
            while (true) {
                if (state == State.FAILED) throw failure;
                // Before the state: a server that cancelled and answered (the hub's "duplicate") wants
                // no more rows while ours may still wait; that is its answer, not our misuse.
                if (cancelled || state == State.ANSWERED) return -1;
                if (state != State.OPEN) throw new IllegalStateException(where + ": the channel was completed or closed");
                if (credits > 0) return credits;
                long left = deadline - System.nanoTime();
                if (left <= 0) return 0;
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for " + where + " to ask for rows");
        } finally {
            lock.unlock();
        }
    }

    /** Send one payload of {@code rows} rows (at most the credit {@link #awaitCredit} returned). */
    public void send(byte[] payload, int rows) throws IOException {
        lock.lock();
        try {
            if (state == State.FAILED) throw failure;
            if (rows > credits) {
                throw new IllegalStateException(where + ": " + rows + " rows exceed the credit of " + credits + " (rule 1.1)");
            }
            credits -= rows;
            sent += rows;
        } finally {
            lock.unlock();
        }
        conn.send(Frames.payloadHeader(STREAM_ID, true, false), payload, 0, payload.length);
    }

    /** Tell the server that every payload was sent (PAYLOAD with COMPLETE). */
    public void complete() throws IOException {
        lock.lock();
        try {
            if (state == State.FAILED) throw failure;
            if (state != State.OPEN) return;
            state = State.SENT_COMPLETE;
        } finally {
            lock.unlock();
        }
        conn.send(Frames.payloadHeader(STREAM_ID, false, true));
    }

    /**
     * Wait up to {@code timeoutNanos} for the server to complete its side; its answers (payload data).
     * Throws its ERROR, or a timeout naming how long it waited.
     */
    public List<byte[]> awaitAnswers(long timeoutNanos) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        lock.lock();
        try {
            while (state != State.ANSWERED) {
                if (state == State.FAILED) throw failure;
                if (state == State.CLOSED) throw new ConnectionLostException(where + ": the channel was closed");
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new java.io.InterruptedIOException(where + " did not answer within "
                            + TimeUnit.NANOSECONDS.toSeconds(timeoutNanos) + " s after the last of " + sent + " rows");
                }
                changed.awaitNanos(left);
            }
            return new ArrayList<>(answers);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for " + where + " to answer");
        } finally {
            lock.unlock();
        }
    }

    /** End the channel with ERROR (the server drops what it holds of it) and close. */
    public void fail(String message) {
        boolean open;
        lock.lock();
        try {
            open = state == State.OPEN || state == State.SENT_COMPLETE;
            state = State.CLOSED;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        conn.closeAfter(open ? Frames.error(STREAM_ID, Frames.APPLICATION_ERROR, message) : null);
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (state != State.FAILED) state = State.CLOSED;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        conn.close(null);
    }

    private void failWith(IOException why) {
        lock.lock();
        try {
            if (state != State.CLOSED && state != State.ANSWERED && state != State.FAILED) {
                state = State.FAILED;
                failure = why;
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private final class Listener implements Connection.Listener {
        @Override
        public void onFrame(Frame f) {
            if (f.streamId() != STREAM_ID) return;
            switch (f.type()) {
                case Frames.REQUEST_N:
                    lock.lock();
                    try {
                        credits = Math.min(Long.MAX_VALUE / 2, credits + f.requestN());
                        changed.signalAll();
                    } finally {
                        lock.unlock();
                    }
                    break;
                case Frames.CANCEL:
                    lock.lock();
                    try {
                        cancelled = true;
                        changed.signalAll();
                    } finally {
                        lock.unlock();
                    }
                    break;
                case Frames.PAYLOAD:
                    onAnswer(f);
                    break;
                case Frames.ERROR:
                    failWith(new RemoteException(f.errorCode(), where + " refused the rows after " + sent() + " sent: "
                            + f.text()));
                    break;
                default:
                    break;
            }
        }

        @Override
        public void onClosed(IOException why) {
            failWith(why != null ? why : new ConnectionLostException(where + ": the connection was closed"));
        }
    }

    private void onAnswer(Frame f) {
        lock.lock();
        try {
            if (f.has(Frames.FLAG_NEXT)) {
                if (answers.size() >= maxAnswers) {
                    state = State.FAILED;
                    failure = new ProtocolException(where + " answered more than the " + maxAnswers + " answers asked for (rule 1.1)");
                    changed.signalAll();
                    return;
                }
                answers.add(f.data());
            }
            if (f.has(Frames.FLAG_COMPLETE) && state != State.FAILED) state = State.ANSWERED;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
