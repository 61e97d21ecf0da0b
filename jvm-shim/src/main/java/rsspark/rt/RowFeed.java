package rsspark.rt;

import java.io.IOException;

/**
 * Rows of one publisher, numbered by stream position, as chunks: what a reader (an executor's
 * long-running task, or the driver in micro-batch mode) takes from an endpoint or a JVM publisher.
 * Demand is bounded by the feed: at most {@code maxInFlight} rows are requested and not yet taken.
 */
interface RowFeed extends AutoCloseable {
    /** The next chunk, waiting up to {@code timeoutNanos}; null on timeout or when the publisher completed. */
    Chunk poll(long timeoutNanos) throws IOException;

    /** The publisher completed and every chunk was taken. */
    boolean isComplete();

    /** Rows before {@code position} are durable in Spark's checkpoint: the publisher side may forget them. */
    void acknowledge(long position) throws IOException;

    /** Stop reading and cancel the publisher. */
    void cancel();

    /** Stop reading without cancelling: the stream waits for a reader to continue it. */
    void detach();

    @Override
    default void close() {
        detach();
    }

    /** Names the publisher in messages. */
    String where();
}
