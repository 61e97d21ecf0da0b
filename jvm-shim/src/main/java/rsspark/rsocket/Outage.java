package rsspark.rsocket;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One outage of a stream's connection, by the same rules as Python's
 * {@code rs_spark/net/zero_loss/outage.py}: it starts when the connection drops or cannot be opened
 * and ends when a connection resumes the stream, when the server refuses (final), or when the bound
 * passes (the window the server keeps the stream for, plus the keepalive lifetime: see
 * {@link #boundMs}). Tries are spaced by a capped exponential backoff with jitter ({@link #backoffMs}).
 * A WARN line says so when it starts, once per {@link #WARN_EVERY_NANOS} while it lasts, and when it ends.
 */
public final class Outage {
    /** The window a server keeps a detached stream for when neither it nor the reader said otherwise (ms). */
    public static final long DEFAULT_WINDOW_MS = 600_000;
    /** Between two WARN lines of one outage. */
    public static final long WARN_EVERY_NANOS = TimeUnit.SECONDS.toNanos(30);

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("rsspark.rsocket");

    private final String where;
    private final String what;
    private final long started = System.nanoTime();
    private final long boundMs;
    private int tries;
    private String last;
    private long warnedAt = started;

    /** {@code where}: what lost its connection (never with a token); {@code what}: what is tried again. */
    public Outage(String where, String what, Throwable cause, long boundMs, String boundedBy) {
        this.where = where;
        this.what = what;
        this.boundMs = boundMs;
        this.last = said(cause);
        LOG.warn("{}: connection lost ({}); {}, trying for up to {} s ({})", where, last, what,
                Math.round(boundMs / 1000.0), boundedBy);
    }

    /**
     * The pause (ms) after failed try {@code attempt} (0 first), {@code u} uniform in [0, 1): half the
     * step {@code firstMs * 2^attempt} capped at {@code maxMs}, plus {@code u} times the other half.
     */
    public static long backoffMs(long firstMs, long maxMs, int attempt, double u) {
        double step = Math.min((double) maxMs, firstMs * Math.pow(2, Math.min(attempt, 64)));
        return Math.round(step / 2 + u * step / 2);
    }

    /**
     * How long (ms) a reader tries after a drop: the window the server stated ({@code statedMs} >= 0),
     * else the one it asked for ({@code askedSeconds} > 0), else {@link #DEFAULT_WINDOW_MS}; plus the
     * keepalive lifetime (the server may notice the drop that much later, and its window starts then).
     */
    public static long boundMs(long statedMs, double askedSeconds, long lifetimeMs) {
        long window = statedMs >= 0 ? statedMs : askedSeconds > 0 ? Math.round(askedSeconds * 1000) : DEFAULT_WINDOW_MS;
        return window + lifetimeMs;
    }

    public long boundMs() {
        return boundMs;
    }

    public int tries() {
        return tries;
    }

    public long elapsedMs() {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    }

    /** Whether the bound passed: the server surely no longer keeps the stream. */
    public boolean over() {
        return elapsedMs() >= boundMs;
    }

    /** A try failed (not a refusal): counted, and said at most once per {@link #WARN_EVERY_NANOS}. */
    public void failed(Throwable cause) {
        tries++;
        last = said(cause);
        long now = System.nanoTime();
        if (now - warnedAt >= WARN_EVERY_NANOS) {
            warnedAt = now;
            LOG.warn("{}: still unreachable after {} s ({} tries; last: {}); {}, giving up in {} s", where,
                    elapsedMs() / 1000, tries, last, what, Math.max(0, boundMs - elapsedMs()) / 1000);
        }
    }

    /** Nanoseconds to wait before the next try: the backoff's, never past the bound. */
    public long pauseNanos(long firstMs, long maxMs) {
        long ms = backoffMs(firstMs, maxMs, Math.max(0, tries - 1), ThreadLocalRandom.current().nextDouble());
        return TimeUnit.MILLISECONDS.toNanos(Math.max(0, Math.min(ms, boundMs - elapsedMs())));
    }

    /** The outage is over: {@code how} says whether it resumed or why it gave up. */
    public void ended(String how) {
        LOG.warn("{}: {} after {} s of outage ({} tries)", where, how, String.format(java.util.Locale.ROOT, "%.1f",
                elapsedMs() / 1000.0), tries);
    }

    private static String said(Throwable t) {
        String s = Endpoint.redact(t.getClass().getSimpleName() + ": " + t.getMessage());
        return s.length() > 500 ? s.substring(0, 500) : s;
    }
}
