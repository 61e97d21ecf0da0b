package rsspark.rt;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The last position Spark committed, per stream, in this JVM. A real-time task learns the committed
 * position from its partition when it starts; Spark commits a batch while the next one (or, with
 * asynchronous progress tracking, the one after) is already running, so a task that waited for
 * its successor would leave the server keeping two or three batches of rows. Where the driver
 * and the task share a JVM (local mode, or a driver that runs tasks) the task reads the position
 * here and acknowledges it upstream within {@link LiveReader#ACK_EVERY_NANOS}; elsewhere the
 * acknowledgement waits for the next batch's task.
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
