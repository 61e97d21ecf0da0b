package rsspark.rsocket;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One client connection to an rs_spark.net server over TCP, TLS or a Unix socket ({@link Transport}):
 * frames out with their 3-byte length prefix, frames in on a reader thread (every length checked
 * against {@link Options#maxFrameBytes} before its body is read, every frame decoded by
 * {@link Frames#decode}), KEEPALIVE sent every
 * {@link Options#keepaliveMs} and answered, and the connection closed when the server stays silent
 * past {@link Options#lifetimeMs}. Stream frames, METADATA_PUSH and RESUME_OK go to the {@link Listener};
 * a connection ERROR (stream 0) closes the connection with a {@link RemoteException}.
 */
public final class Connection implements AutoCloseable {
    /** What the owner of a connection hears. Both run on the reader thread (onClosed: on the closing one). */
    public interface Listener {
        void onFrame(Frame frame);

        /** Exactly once, when the connection closes; {@code why} is null for a close this side asked for. */
        void onClosed(IOException why);
    }

    /** Connection settings (all in milliseconds or bytes). */
    public static final class Options implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        public int connectTimeoutMs = 10_000;
        public int keepaliveMs = 2_000;
        public int lifetimeMs = 60_000;
        public int maxFrameBytes = Frames.MAX_FRAME_LENGTH;
        /** How a tls:// endpoint is trusted (ignored for tcp:// and unix://). */
        public TlsSettings tls = new TlsSettings(null, null, null, null);
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("rsspark.rsocket");
    private static final java.util.Set<String> WARNED = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private static final ScheduledExecutorService TIMERS = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "rs-spark-rsocket-keepalive");
        t.setDaemon(true);
        return t;
    });

    private final Endpoint endpoint;
    private final Options options;
    private final Transport transport;
    private final OutputStream out;
    private final DataInputStream in;
    private final Listener listener;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final ReentrantLock writeLock = new ReentrantLock();
    private final java.util.concurrent.CountDownLatch readerDone = new java.util.concurrent.CountDownLatch(1);
    /** Counted down once {@link #closedWith} holds the reason (after the CAS on {@link #closed}). */
    private final java.util.concurrent.CountDownLatch closeKnown = new java.util.concurrent.CountDownLatch(1);
    private volatile Thread readerThread;
    private volatile boolean closingByUs; // EOF / errors after our FIN are the close we asked for
    private volatile long lastReceived = System.nanoTime();
    private volatile boolean keepaliveOwed; // the timer found a send in progress: that sender writes it
    private long lastAsked = System.nanoTime(); // the timer's: when it last asked for a keepalive
    private volatile IOException closedWith;
    private ScheduledFuture<?> timer;

    private Connection(Endpoint endpoint, Options options, Transport transport, Listener listener) {
        this.endpoint = endpoint;
        this.options = options;
        this.transport = transport;
        this.listener = listener;
        this.out = new BufferedOutputStream(transport.out, 64 * 1024);
        InputStream raw = transport.in;
        this.in = new DataInputStream(new java.io.BufferedInputStream(raw, 64 * 1024));
    }

    /** Connect (not yet reading: send the first frame, then {@link #start}). */
    public static Connection dial(Endpoint endpoint, Options options, Listener listener) throws ConnectionLostException {
        String warning = clearTextWarning(endpoint);
        if (warning != null) LOG.warn(warning);
        try {
            return new Connection(endpoint, options, Transport.open(endpoint, options), listener);
        } catch (ConnectionLostException e) {
            throw e; // TLS: already says what failed and what to do
        } catch (SocketTimeoutException e) {
            throw new ConnectionLostException("could not connect to " + endpoint.base() + " within "
                    + options.connectTimeoutMs + " ms; check the address and that the server is running", e);
        } catch (IOException e) {
            throw new ConnectionLostException("could not connect to " + endpoint.base() + ": " + e.getMessage()
                    + "; check the address and that the server is running", e);
        }
    }

    /**
     * The warning to log when {@code endpoint}'s token would cross a network unencrypted
     * ({@code tcp://} to a host that is not loopback), once per address and JVM; else null. The
     * same text as the Python client's ({@code rs_spark.net.client.warn_if_token_in_clear_text}).
     */
    static String clearTextWarning(Endpoint endpoint) {
        if (endpoint.token == null || !endpoint.scheme.equals("tcp") || endpoint.isLoopback()) return null;
        if (!WARNED.add(endpoint.base())) return null;
        return "rs_spark.net: sending a token to " + endpoint.base() + " over tcp:// without TLS: anyone on the "
                + "network path can read it and the data; use tls:// (option tlsCaFile: the server's certificate or "
                + "its CA) on untrusted networks";
    }

    public Endpoint endpoint() {
        return endpoint;
    }

    /** Start reading frames and sending keepalives. */
    public void start() {
        Thread reader = new Thread(this::readLoop, "rs-spark-rsocket-reader " + endpoint.base());
        reader.setDaemon(true);
        readerThread = reader;
        reader.start();
        long tick = Math.max(20, Math.min(1000, Math.min(options.keepaliveMs / 2, options.lifetimeMs / 4)));
        timer = TIMERS.scheduleAtFixedRate(this::onTick, tick, tick, TimeUnit.MILLISECONDS);
    }

    /** The error the connection closed with (null while open, or after a close this side asked for). */
    public IOException closedWith() {
        return closedWith;
    }

    public boolean isClosed() {
        return closed.get();
    }

    // -- sending ----------------------------------------------------------------------------------
    public void send(byte[] frame) throws IOException {
        send(frame, null, 0, 0);
    }

    /** One frame made of {@code head} and {@code data[off, off + len)} (a PAYLOAD header and its Arrow bytes). */
    public void send(byte[] head, byte[] data, int off, int len) throws IOException {
        int n = head.length + len;
        if (n > options.maxFrameBytes) {
            throw new IllegalArgumentException("a frame of " + n + " bytes exceeds the frame size limit of "
                    + options.maxFrameBytes + " bytes; send fewer rows per payload");
        }
        writeLock.lock();
        try {
            write(n, head, data, off, len);
            if (keepaliveOwed) writeKeepalive();
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * A keepalive asking the server to answer; when a send is in progress, its sender writes it
     * after its frame. Sent also while we send without pause: a server with nothing else to send
     * (a hub whose credit never runs out) is heard from only in its answers, and without them the
     * connection would be declared dead after the lifetime while rows flow.
     */
    private void sendKeepalive() {
        if (!writeLock.tryLock()) {
            keepaliveOwed = true;
            return;
        }
        try {
            writeKeepalive();
        } catch (IOException e) {
            // write() closed the connection with the cause
        } finally {
            writeLock.unlock();
        }
    }

    /** Under {@code writeLock}. */
    private void writeKeepalive() throws IOException {
        keepaliveOwed = false;
        byte[] frame = Frames.keepalive(true, new byte[0]);
        write(frame.length, frame, null, 0, 0);
    }

    private void write(int n, byte[] head, byte[] data, int off, int len) throws IOException {
        if (closed.get()) throw lost("cannot send: the connection to " + endpoint.base() + " is closed");
        try {
            out.write(n >>> 16);
            out.write(n >>> 8);
            out.write(n);
            out.write(head);
            if (len > 0) out.write(data, off, len);
            out.flush();
        } catch (IOException e) {
            IOException why = writeFailure(e);
            close(why);
            throw why;
        }
    }

    /**
     * Why a write failed. A server that refuses us (a wrong token, a rejected RESUME) sends ERROR and
     * closes; our reader then closes the socket under a write in progress, or the write meets the
     * server's reset first. Either way the server's reason is the one the user needs, not "Socket
     * closed", so wait briefly for the reader to say why before falling back to the socket's error.
     */
    private IOException writeFailure(IOException e) {
        if (Thread.currentThread() != readerThread) {
            try {
                closeKnown.await(WRITE_FAILURE_GRACE_MS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
        }
        IOException peer = closedWith;
        if (peer instanceof RemoteException || peer instanceof ProtocolException) return peerReason("cannot send", peer);
        return new ConnectionLostException("writing to " + endpoint.base() + " failed: " + e.getMessage()
                + "; the server closed the connection or the network dropped it", e);
    }

    private static final long WRITE_FAILURE_GRACE_MS = 500;

    private IOException lost(String message) {
        IOException c = closedWith;
        return c != null ? peerReason(message, c) : new ConnectionLostException(message);
    }

    /** {@code why} the connection closed, for a caller who tried to send: a server's ERROR keeps its code. */
    private static IOException peerReason(String message, IOException why) {
        if (why instanceof RemoteException r) {
            RemoteException copy = new RemoteException(r.code, r.getMessage());
            copy.initCause(r);
            return copy;
        }
        return new ConnectionLostException(message + ": " + why.getMessage(), why);
    }

    // -- closing ----------------------------------------------------------------------------------
    /** Close once: the listener hears {@code why} (null: this side asked for it). */
    public void close(IOException why) {
        if (!closed.compareAndSet(false, true)) return;
        closedWith = why;
        closeKnown.countDown();
        if (timer != null) timer.cancel(false);
        transport.close();
        listener.onClosed(why);
    }

    /**
     * Send {@code frame} (e.g. CANCEL; may be null), then close gracefully: our side's FIN first, then
     * wait (up to 2 s) for the server to close its side. Closing at once while the server's frames
     * are still unread would reset the connection, and a reset may discard our last frame before the
     * server reads it.
     */
    public void closeAfter(byte[] frame) {
        closingByUs = true;
        // A task Spark stops has its interrupt flag set: the graceful wait below still happens (it is
        // what keeps the CANCEL from being reset away), and the flag is restored after it.
        boolean interrupted = Thread.interrupted();
        try {
            if (frame != null) send(frame);
            writeLock.lock();
            try {
                transport.shutdownOutput();
            } finally {
                writeLock.unlock();
            }
            readerDone.await(2, TimeUnit.SECONDS);
        } catch (IOException e) {
            // already closing with the write error
        } catch (InterruptedException e) {
            interrupted = true;
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
        close(null);
    }

    @Override
    public void close() {
        close(null);
    }

    // -- reading ----------------------------------------------------------------------------------
    private void readLoop() {
        try {
            readFrames();
        } finally {
            readerDone.countDown();
        }
    }

    private void readFrames() {
        try {
            while (!closed.get()) {
                Frame f = readFrame();
                lastReceived = System.nanoTime();
                dispatch(f);
            }
        } catch (IOException e) {
            if (closingByUs) close(null);
            else onReadFailure(e);
        } catch (RuntimeException e) {
            close(new ProtocolException("internal error while reading from " + endpoint.base() + ": " + e, e));
        }
    }

    private void onReadFailure(IOException e) {
        if (e instanceof ProtocolException) {
            if (!closed.get()) {
                try {
                    send(Frames.error(0, Frames.CONNECTION_ERROR, e.getMessage()));
                } catch (IOException | RuntimeException ignored) {
                    // closing anyway
                }
            }
            close(new ProtocolException(endpoint.base() + " sent a malformed frame: " + e.getMessage()
                    + "; the connection was closed", e));
        } else if (e instanceof EOFException) {
            close(new ConnectionLostException(endpoint.base() + " closed the connection"));
        } else {
            close(new ConnectionLostException("reading from " + endpoint.base() + " failed: " + e.getMessage()
                    + "; the server closed the connection or the network dropped it", e));
        }
    }

    private Frame readFrame() throws IOException {
        int b0 = in.read();
        if (b0 < 0) throw new EOFException();
        int len = (b0 << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
        if (len > options.maxFrameBytes) {
            throw new ProtocolException("frame length " + len + " exceeds the limit of " + options.maxFrameBytes
                    + " bytes (refused before reading its body)");
        }
        if (len < 6) throw new ProtocolException("frame length " + len + " is shorter than the 6-byte frame header");
        byte[] buf = new byte[len];
        in.readFully(buf);
        return Frames.decode(buf, len);
    }

    private void dispatch(Frame f) throws IOException {
        if (f.streamId() != 0) {
            listener.onFrame(f);
            return;
        }
        switch (f.type()) {
            case Frames.KEEPALIVE:
                if (f.has(Frames.FLAG_RESPOND)) {
                    byte[] data = java.util.Arrays.copyOfRange(f.buf(), f.dataOffset(), f.dataOffset() + Math.min(f.dataLength(), 1024));
                    send(Frames.keepalive(false, data));
                }
                break;
            case Frames.ERROR:
                close(new RemoteException(f.errorCode(), endpoint.base() + " closed the connection with ERROR["
                        + Frames.errorName(f.errorCode()) + "]: " + f.text()));
                break;
            case Frames.METADATA_PUSH:
            case Frames.RESUME_OK:
                listener.onFrame(f);
                break;
            default:
                break; // LEASE, EXT with IGNORE, a stray SETUP/RESUME: nothing for a client to do
        }
    }

    private void onTick() {
        if (closed.get()) return;
        long now = System.nanoTime();
        long silentMs = TimeUnit.NANOSECONDS.toMillis(now - lastReceived);
        if (silentMs > options.lifetimeMs) {
            close(new ConnectionLostException("no frame from " + endpoint.base() + " for " + silentMs + " ms, more than "
                    + "the keepalive lifetime of " + options.lifetimeMs + " ms: the server is gone or stalled"));
            return;
        }
        // Every interval, whatever else we send (as the spec has it): our sends alone do not make the server speak.
        if (TimeUnit.NANOSECONDS.toMillis(now - lastAsked) >= options.keepaliveMs) {
            lastAsked = now;
            sendKeepalive();
        }
    }
}
