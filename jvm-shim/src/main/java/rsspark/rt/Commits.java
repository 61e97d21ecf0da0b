package rsspark.rt;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The last position Spark committed, per stream, in this JVM: for a {@code jvmPublisher}, whose
 * kept rows live in the JVM that reads it. Spark commits a batch while the next one (or, with
 * asynchronous progress tracking, the one after) is already running; where the driver and the task
 * share a JVM (local mode, or a driver that runs tasks) the task reads the position here and frees
 * the kept rows within {@link LiveReader#ACK_EVERY_NANOS}; elsewhere that waits for the next batch's
 * task. An endpoint's stream is acknowledged by the driver as soon as Spark commits ({@link DriverAcks}).
 */
final class Commits {
    private Commits() {}

    private static final ConcurrentHashMap<String, Long> COMMITTED = new ConcurrentHashMap<>();

    static void committed(String key, long position) {
        COMMITTED.merge(key, position, Math::max);
    }

    /** The last committed position of stream {@code key} known in this JVM (-1: none). */
    static long of(String key) {
        Long p = COMMITTED.get(key);
        return p == null ? -1 : p;
    }
}
