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
 * cancels it. A dropped connection (or one that cannot be opened) is an {@link Outage}: each
 * {@link #poll} tries to resume when the backoff says so ({@link Settings#backoffFirstMs},
 * {@link Settings#backoffMaxMs}, with jitter) and otherwise returns nothing, for as long as the
 * server keeps the stream: the window it states (METADATA_PUSH {@code message/x.rs-spark.window.v1}
 * when the stream opens and after each RESUME_OK), else the one asked for, else 10 minutes, plus the
 * keepalive lifetime ({@link Settings#reconnectForMs} >= 0: that long instead). Only a refusal or that
 * bound's end fails the stream. A stream opened at position 0 whose first connection cannot be opened,
 * or drops before the server took the stream, fails at once (nothing was read of it yet: an address or a
 * server that is not there is a mistake to show, not an outage to wait out); one opened further on (a
 * task continuing it) waits for its endpoint.
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
        /** -1 (default): try to resume for as long as the server keeps the stream; 0: never; > 0: that long (ms). */
        public long reconnectForMs = -1;
        /** The first pause between tries to resume, doubled each try (with jitter) up to {@link #backoffMaxMs}. */
        public long backoffFirstMs = 100;
        public long backoffMaxMs = 10_000;
    }

    private enum State { OPEN, COMPLETE, FAILED, CLOSED }

    private static final int STREAM_ID = 1;
    /** Composite metadata entry of the server's METADATA_PUSH: the window it keeps the stream for, ms (8 bytes). */
    public static final String WINDOW_MIME = "message/x.rs-spark.window.v1";

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
    private long statedWindowMs = -1; // the window the server stated (-1: none yet)
    private boolean opened; // a server took the stream (answered its opening, or resumed it) at least once
    private boolean newStream; // opened at position 0 by open(): until a server takes it, a drop is final
    private Outage outage; // while the stream has no connection
    private long nextTry; // System.nanoTime() of the next try to resume, during an outage

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
        if (acknowledge > 0) r.acknowledged = acknowledge; // sent right after RESUME_OK (also after an outage)
        r.newStream = position == 0 && acknowledge <= 0;
        try {
            r.connect(position == 0);
        } catch (RemoteException | ProtocolException | TlsRefusedException | java.io.InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            if (mode != Mode.RESUMABLE || r.newStream) throw e;
            r.lost(e); // a stream read before, unreachable now: an outage from the start, ridden out by poll
        }
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
            opened = true;
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
                long now = System.nanoTime();
                if (broken && now - nextTry >= 0) {
                    lock.unlock();
                    try {
                        tryToResume();
                    } finally {
                        lock.lock();
                    }
                    continue;
                }
                long left = deadline - now;
                if (left <= 0) return null;
                changed.awaitNanos(broken ? Math.min(left, nextTry - now) : left);
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
        if (topUp > 0) sendOrLose(c, Frames.requestN(STREAM_ID, topUp)); // credits again after a resume
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
        if (c != null) sendOrLose(c, Frames.metadataPush(Metadata.commit(position))); // else sent after resuming
    }

    /**
     * Send on {@code c}; a resumable stream whose connection fails under the write is resumed (the frame is
     * not lost: credits are granted again and the last acknowledgement sent again after RESUME_OK).
     */
    private void sendOrLose(Connection c, byte[] frame) throws IOException {
        try {
            c.send(frame);
        } catch (IOException e) {
            if (mode != Mode.RESUMABLE || e instanceof java.io.InterruptedIOException || e instanceof RemoteException
                    || e instanceof ProtocolException) throw e;
            lock.lock();
            try {
                if (c != conn || state != State.OPEN) return;
            } finally {
                lock.unlock();
            }
            lost(e);
        }
    }

    /** The outage under way, if any (for tests and logs). */
    public Outage outage() {
        lock.lock();
        try {
            return outage;
        } finally {
            lock.unlock();
        }
    }

    /** The window (ms) the server said it keeps the stream for after a drop; -1 before it said. */
    public long statedWindowMs() {
        lock.lock();
        try {
            return statedWindowMs;
        } finally {
            lock.unlock();
        }
    }

    /** The stream has no connection: an outage starts (under the lock or not; {@code why}: the cause). */
    private void lost(IOException why) {
        lock.lock();
        try {
            broken = true;
            if (outage == null) {
                long bound = settings.reconnectForMs >= 0 ? settings.reconnectForMs
                        : Outage.boundMs(statedWindowMs, settings.windowSeconds, settings.connection.lifetimeMs);
                outage = new Outage(where(), "resuming it at position " + consumed, why, bound,
                        settings.reconnectForMs >= 0 ? "reconnectForMs" : "the endpoint's window");
                nextTry = System.nanoTime();
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** One try to resume (poll's thread, without the lock): a refusal fails the stream, so does the bound's end. */
    private void tryToResume() throws IOException {
        Outage o;
        boolean fresh;
        lock.lock();
        try {
            o = outage;
            fresh = consumed == 0;
        } finally {
            lock.unlock();
        }
        try {
            connect(fresh);
        } catch (RemoteException | ProtocolException | TlsRefusedException e) {
            o.ended("gave up: the server refused to resume the stream");
            fail(e);
            throw e;
        } catch (java.io.InterruptedIOException e) {
            throw e;
        } catch (IOException e) {
            o.failed(e);
            IOException gaveUp = null;
            lock.lock();
            try {
                broken = true;
                if (o.over()) gaveUp = windowEnded(o, e);
                else nextTry = System.nanoTime() + o.pauseNanos(settings.backoffFirstMs, settings.backoffMaxMs);
            } finally {
                lock.unlock();
            }
            if (gaveUp != null) {
                o.ended("gave up resuming the stream");
                fail(gaveUp);
                throw gaveUp;
            }
            return;
        }
        lock.lock();
        try {
            outage = null;
        } finally {
            lock.unlock();
        }
        o.ended("resumed the stream at position " + taken());
    }

    private IOException windowEnded(Outage o, IOException last) {
        if (!opened) {
            return new ConnectionLostException(where() + ": could not be opened within " + o.boundMs() / 1000 + " s: "
                    + last.getMessage(), last);
        }
        return new ConnectionLostException(where() + " could not be resumed at position " + consumed + " within "
                + o.boundMs() / 1000 + " s (the endpoint's window and the keepalive lifetime): the endpoint no longer "
                + "keeps the stream, so the rows from there are lost; start the query from a new checkpointLocation "
                + "to read the stream afresh. The last try failed with: " + last.getMessage(), last);
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
            if (f.type() == Frames.METADATA_PUSH && f.streamId() == 0) {
                onPush(f);
                return;
            }
            if (f.streamId() != STREAM_ID) return; // other streams: not ours
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
                boolean untaken = newStream && !opened; // nothing read of a new stream: shown, not waited out
                if (mode == Mode.RESUMABLE && !untaken && !(why instanceof RemoteException)
                        && !(why instanceof ProtocolException)) {
                    lost(why); // poll resumes at the position it consumed
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

    /** The server's METADATA_PUSH: the window entry is read (and checked); retention counts are not needed here. */
    private void onPush(Frame f) {
        if (f.metadata() == null) return;
        try {
            for (Metadata.Entry e : Metadata.parseComposite(f.metadata())) {
                if (!e.mime().equals(WINDOW_MIME)) continue;
                if (e.payload().length != 8) {
                    throw new ProtocolException(WINDOW_MIME + " entry is " + e.payload().length + " bytes; a window is 8");
                }
                long ms = java.nio.ByteBuffer.wrap(e.payload()).getLong();
                if (ms < 0) throw new ProtocolException(WINDOW_MIME + " window has its reserved top bit set");
                lock.lock();
                try {
                    statedWindowMs = ms;
                    opened = true; // stated once the server opened (or resumed) the stream
                } finally {
                    lock.unlock();
                }
            }
        } catch (ProtocolException e) {
            fail(new ProtocolException(where() + ": unreadable METADATA_PUSH from the server: " + e.getMessage(), e));
            Connection c = currentConnection();
            if (c != null) c.closeAfter(Frames.cancel(STREAM_ID));
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
            opened = true; // the server answered on the stream: it took it
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
