package rsspark.rsocket;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Reads a Publisher served by rs_spark.net with request-stream, one payload at a time, within a
 * bounded number of rows in flight: the stream is opened with {@code maxInFlight} credits and
 * topped up with REQUEST_N as rows are {@linkplain #consumed consumed}, so at most
 * {@code maxInFlight} rows are ever requested and not yet taken (rule 1.1 is checked: a server
 * that sends more fails the stream). Payloads are decoded and validated on the connection's reader
 * thread by the {@link PayloadDecoder}; {@link #poll} hands them to the consumer.
 *
 * <p>Positions count the stream's rows since it began (rs_spark/net/zero_loss/resume.py). A resumable stream
 * ({@link #open} with {@link Mode#RESUMABLE}) is opened by {@code key}: RESUME at the position asked
 * for, or, at position 0 of a stream the server does not know yet, SETUP with the resume flag and
 * REQUEST_STREAM. {@link #acknowledge} tells the server that rows before a position are durable;
 * {@link #detach} closes without CANCEL (the server keeps the stream for its window), {@link #cancel}
 * cancels it. A dropped connection is resumed by the next {@link #poll}, for up to
 * {@link Settings#reconnectForMs}.
 */
public final class StreamReader<T> implements AutoCloseable {
    /** Decodes one payload's data (hostile until validated) into an item of some rows. */
    public interface PayloadDecoder<T> {
        T decode(byte[] buf, int off, int len) throws ProtocolException;

        int rows(T item);
    }

    /** How the stream is opened. */
    public enum Mode {
        /** rs_spark's resumable streams: positions survive reconnects and reader restarts. */
        RESUMABLE,
        /** Plain request-stream: a new subscription each time; nothing is kept for a reader that comes back. */
        PLAIN
    }

    /** Reader settings (serializable: they travel in Spark's input partitions). */
    public static final class Settings implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        public Connection.Options connection = new Connection.Options();
        public int maxInFlight = 1024;
        /** Seconds the server should keep the stream after a drop; <= 0: the server's own window. */
        public double windowSeconds = 0;
        public long reconnectForMs = 30_000;
    }

    private enum State { OPEN, COMPLETE, FAILED, CLOSED }

    private static final int STREAM_ID = 1;
    private static final long[] BACKOFF_MS = {50, 100, 200, 500, 1000, 2000};

    private final Endpoint endpoint;
    private final Settings settings;
    private final PayloadDecoder<T> decoder;
    private final Mode mode;
    private final String key;
    private final byte[] resumeToken;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final ArrayDeque<T> queue = new ArrayDeque<>();
    private State state = State.OPEN;
    private IOException failure;
    private Connection conn;
    private boolean broken; // the connection dropped; the next poll resumes
    private long received; // position after the last row received
    private long granted; // position up to which credits were granted
    private long consumed; // position after the rows of the payloads the consumer took
    private long acknowledged;

    private StreamReader(Endpoint endpoint, Settings settings, PayloadDecoder<T> decoder, Mode mode, String key,
            long position) {
        this.endpoint = endpoint;
        this.settings = settings;
        this.decoder = decoder;
        this.mode = mode;
        this.key = key;
        this.resumeToken = mode == Mode.RESUMABLE ? Metadata.resumeToken(endpoint.token, key) : null;
        this.received = this.granted = this.consumed = position;
        if (settings.maxInFlight < 1) throw new IllegalArgumentException("maxInFlight must be >= 1, got " + settings.maxInFlight);
    }

    /**
     * Open the stream at {@code position} (a resumable one: stream {@code key}; a plain one: a new
     * subscription whose rows are numbered from {@code position}). {@code acknowledge} (> 0) is sent
     * as soon as the stream is open.
     */
    public static <T> StreamReader<T> open(Endpoint endpoint, Settings settings, PayloadDecoder<T> decoder, Mode mode,
            String key, long position, long acknowledge) throws IOException {
        StreamReader<T> r = new StreamReader<>(endpoint, settings, decoder, mode,
                mode == Mode.RESUMABLE ? Metadata.checkKey(key) : key, position);
        r.connect(position == 0);
        if (acknowledge > 0) r.acknowledge(acknowledge);
        return r;
    }

    /**
     * Cancel resumable stream {@code key} if the server still keeps it: RESUME at {@code position},
     * then CANCEL. A stream the server does not know (never opened, already ended or expired) is
     * left alone: nothing is subscribed just to be cancelled. Returns whether it was cancelled.
     */
    public static boolean cancelRemote(Endpoint endpoint, Settings settings, String key, long position) throws IOException {
        StreamReader<Object> r = new StreamReader<>(endpoint, settings, null, Mode.RESUMABLE, Metadata.checkKey(key), position);
        try {
            r.resume(false);
        } catch (RemoteException e) {
            if (e.code == Frames.REJECTED_RESUME) return false;
            throw e;
        }
        r.cancel();
        return true;
    }

    public String where() {
        return "remote publisher " + endpoint + (key != null && mode == Mode.RESUMABLE ? " (stream " + key + ")" : "");
    }

    /** Rows received so far, as a stream position. */
    public long received() {
        lock.lock();
        try {
            return received;
        } finally {
            lock.unlock();
        }
    }

    /** Rows requested and not yet consumed (never more than {@code maxInFlight}). */
    public long outstanding() {
        lock.lock();
        try {
            return granted - consumed;
        } finally {
            lock.unlock();
        }
    }

    // -- opening ----------------------------------------------------------------------------------
    private void connect(boolean mayStartFresh) throws IOException {
        if (mode == Mode.PLAIN) {
            openFresh(null);
            return;
        }
        try {
            resume();
        } catch (RemoteException e) {
            if (e.code != Frames.REJECTED_RESUME || !mayStartFresh) {
                throw new RemoteException(e.code, where() + " cannot be resumed at position " + consumed + ": "
                        + e.getMessage() + ". The rows from there are no longer kept (the stream expired, or its "
                        + "server restarted without spill), so continuing would lose them; start the query from a new "
                        + "checkpointLocation to read the stream afresh");
            }
            openFresh(resumeToken); // a stream never opened before: the server does not know its token yet
        }
    }

    private void openFresh(byte[] token) throws IOException {
        Connection c = dial();
        List<Metadata.Entry> extra = token == null ? List.of() : List.of(Metadata.resumeEntry(settings.windowSeconds));
        Connection.Options o = settings.connection;
        c.send(Frames.setup(o.keepaliveMs, o.lifetimeMs, Metadata.COMPOSITE, Metadata.ARROW_MIME,
                Metadata.setup(endpoint.token, extra), token));
        lock.lock();
        try {
            handshaking = false; // a refused SETUP arrives as ERROR and fails the stream
            received = consumed;
            granted = consumed + settings.maxInFlight;
        } finally {
            lock.unlock();
        }
        c.start();
        sendOpen(c, Frames.request(Frames.REQUEST_STREAM, STREAM_ID, settings.maxInFlight, Metadata.route(endpoint.name)));
    }

    /**
     * Send on a started connection. Its reader may already have failed the stream (a malformed first
     * payload) and closed the connection, so this write fails too: report the stream's failure, the
     * cause, rather than the broken pipe it left behind.
     */
    private void sendOpen(Connection c, byte[] frame) throws IOException {
        try {
            c.send(frame);
        } catch (IOException e) {
            lock.lock();
            try {
                if (state == State.FAILED && failure != null) throw failure;
            } finally {
                lock.unlock();
            }
            throw e;
        }
    }

    private void resume() throws IOException {
        resume(true);
    }

    /** RESUME at the position consumed; {@code grant}: then ask for rows again (else only cancelling follows). */
    private void resume(boolean grant) throws IOException {
        Connection c = dial();
        lock.lock();
        try {
            resumed = false;
        } finally {
            lock.unlock();
        }
        c.send(Frames.resume(resumeToken, consumed));
        c.start();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.connection.connectTimeoutMs);
        lock.lock();
        try {
            while (!resumed && c.closedWith() == null && !c.isClosed()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) break;
                changed.awaitNanos(left);
            }
            if (!resumed) {
                IOException why = c.closedWith();
                c.close(null);
                throw why != null ? why : new ConnectionLostException(endpoint.base() + " did not answer RESUME within "
                        + settings.connection.connectTimeoutMs + " ms");
            }
            handshaking = false;
            // Demand restarts at resumption: the credits of the old connection are forgotten.
            received = consumed;
            granted = consumed + settings.maxInFlight;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            c.close(null);
            throw new java.io.InterruptedIOException("interrupted while resuming " + where());
        } finally {
            lock.unlock();
        }
        if (grant) sendOpen(c, Frames.requestN(STREAM_ID, settings.maxInFlight));
        if (acknowledged > 0) sendOpen(c, Frames.metadataPush(Metadata.commit(acknowledged)));
    }

    private boolean resumed;
    /** The current connection's RESUME is unanswered: its failure is the handshake's to report. */
    private boolean handshaking;

    private Connection dial() throws IOException {
        Listener l = new Listener();
        Connection c = Connection.dial(endpoint, settings.connection, l);
        lock.lock();
        try {
            if (state == State.CLOSED) {
                c.close(null);
                throw new ConnectionLostException(where() + " was closed");
            }
            l.mine = c;
            conn = c;
            handshaking = true;
            broken = false;
            queue.clear(); // rows of a dropped connection after `consumed` are sent again on resumption
        } finally {
            lock.unlock();
        }
        return c;
    }

    // -- the consumer ---------------------------------------------------------------------------
    /**
     * The next decoded payload, waiting up to {@code timeoutNanos}; null when none arrived in time
     * or the stream completed ({@link #isComplete}). Throws when the stream failed (the publisher's
     * error, a protocol violation, a connection that could not be resumed). Taking a payload frees
     * its rows' credit: once half of {@code maxInFlight} is free, REQUEST_N asks for that much more.
     */
    public T poll(long timeoutNanos) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        T item = null;
        long topUp = 0;
        Connection c = null;
        lock.lock();
        try {
            while (item == null) {
                item = queue.poll();
                if (item != null) break;
                if (state == State.FAILED) throw failure;
                if (state != State.OPEN) return null;
                if (broken) {
                    lock.unlock();
                    try {
                        reconnect();
                    } finally {
                        lock.lock();
                    }
                    continue;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) return null;
                changed.awaitNanos(left);
            }
            consumed += decoder.rows(item);
            long window = settings.maxInFlight;
            if (state == State.OPEN && !broken && granted - consumed <= window / 2) {
                topUp = consumed + window - granted;
                granted += topUp;
                c = conn;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for " + where());
        } finally {
            lock.unlock();
        }
        if (topUp > 0) c.send(Frames.requestN(STREAM_ID, topUp));
        return item;
    }

    public boolean isComplete() {
        lock.lock();
        try {
            return state == State.COMPLETE && queue.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /** The position after the rows of every payload {@link #poll} returned. */
    public long taken() {
        lock.lock();
        try {
            return consumed;
        } finally {
            lock.unlock();
        }
    }

    /** Every row before {@code position} is durable: the server may forget them (resumable streams only). */
    public void acknowledge(long position) throws IOException {
        if (mode != Mode.RESUMABLE) return;
        Connection c;
        lock.lock();
        try {
            if (position <= acknowledged) return;
            acknowledged = position;
            c = broken ? null : conn;
        } finally {
            lock.unlock();
        }
        if (c != null) c.send(Frames.metadataPush(Metadata.commit(position))); // else sent after resuming
    }

    private void reconnect() throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.reconnectForMs);
        IOException last = null;
        for (int attempt = 0; System.nanoTime() < deadline; attempt++) {
            try {
                resume();
                return;
            } catch (RemoteException e) {
                fail(e);
                throw e;
            } catch (java.io.InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                last = e;
                try {
                    Thread.sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted while reconnecting to " + where());
                }
            }
        }
        IOException why = new ConnectionLostException(where() + ": the connection dropped and could not be resumed within "
                + settings.reconnectForMs + " ms" + (last == null ? "" : ": " + last.getMessage()), last);
        fail(why);
        throw why;
    }

    // -- ending ---------------------------------------------------------------------------------
    /** Cancel the stream (the server cancels its publisher) and close. */
    public void cancel() {
        Connection c = end();
        if (c != null) c.closeAfter(Frames.cancel(STREAM_ID));
    }

    /** Close without cancelling: a resumable stream waits at the server for a reader to resume it. */
    public void detach() {
        Connection c = end();
        if (c != null) c.closeAfter(null);
    }

    @Override
    public void close() {
        detach();
    }

    private Connection end() {
        lock.lock();
        try {
            boolean wasOpen = state == State.OPEN;
            state = State.CLOSED;
            queue.clear();
            changed.signalAll();
            return conn != null && (wasOpen || !conn.isClosed()) ? conn : null;
        } finally {
            lock.unlock();
        }
    }

    private void fail(IOException why) {
        lock.lock();
        try {
            if (state == State.OPEN) {
                state = State.FAILED;
                failure = why;
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    // -- frames (reader thread) -------------------------------------------------------------------
    private final class Listener implements Connection.Listener {
        Connection mine; // set under the lock once dialled: frames of an older connection are ignored

        private boolean current() {
            lock.lock();
            try {
                return mine != null && mine == conn;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void onFrame(Frame f) {
            if (!current()) return;
            if (f.type() == Frames.RESUME_OK) {
                lock.lock();
                try {
                    resumed = true;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
                return;
            }
            if (f.streamId() != STREAM_ID) return; // METADATA_PUSH (retention stats) and other streams: not ours
            try {
                if (f.type() == Frames.PAYLOAD) onPayload(f);
                else if (f.type() == Frames.ERROR) onError(f);
            } catch (ProtocolException e) {
                ProtocolException why = new ProtocolException(where() + ": " + e.getMessage(), e);
                fail(why);
                Connection c = currentConnection();
                if (c != null) c.closeAfter(Frames.cancel(STREAM_ID));
            }
        }

        @Override
        public void onClosed(IOException why) {
            lock.lock();
            try {
                if (mine != conn || handshaking || state != State.OPEN || why == null) {
                    changed.signalAll();
                    return;
                }
                if (mode == Mode.RESUMABLE && !(why instanceof RemoteException) && !(why instanceof ProtocolException)) {
                    broken = true; // the consumer resumes at the position it consumed
                } else {
                    state = State.FAILED;
                    failure = new IOException(where() + " ended after " + received + " rows: " + why.getMessage(), why);
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    private Connection currentConnection() {
        lock.lock();
        try {
            return conn;
        } finally {
            lock.unlock();
        }
    }

    private void onPayload(Frame f) throws ProtocolException {
        if (f.has(Frames.FLAG_FOLLOWS) && !f.has(Frames.FLAG_COMPLETE)) {
            throw new ProtocolException("the server sent a fragmented payload (FOLLOWS flag); fragments are not reassembled");
        }
        T item = null;
        int k = 0;
        if (f.has(Frames.FLAG_NEXT)) {
            item = decoder.decode(f.buf(), f.dataOffset(), f.dataLength());
            k = decoder.rows(item);
        }
        lock.lock();
        try {
            if (state != State.OPEN) return;
            if (received + k > granted) {
                throw new ProtocolException("the remote publisher sent more than was requested: " + (received + k)
                        + " rows against credits up to position " + granted + " (rule 1.1)");
            }
            received += k;
            if (item != null && k > 0) queue.add(item);
            if (f.has(Frames.FLAG_COMPLETE)) state = State.COMPLETE;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void onError(Frame f) {
        String text = f.text();
        fail(new RemoteException(f.errorCode(), where() + " failed after " + received() + " rows: ERROR["
                + Frames.errorName(f.errorCode()) + "] " + text));
    }
}
