package rsspark.rt;

import java.io.IOException;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.types.StructType;

import rsspark.rsocket.StreamReader;

/** Opens the feed a partition reads: the endpoint's stream, or the JVM publisher's in this JVM. */
final class Feeds {
    private Feeds() {}

    /** Decoding memory of every real-time reader in this JVM: payloads are freed as soon as their rows are copied. */
    private static final BufferAllocator ALLOCATOR = rsspark.jvm.Memory.child("reactive-rt", Long.MAX_VALUE);

    static BufferAllocator allocator() {
        return ALLOCATOR;
    }

    /**
     * Cancel stream {@code key} where it waits for a reader (the query stopped between two batches:
     * no task was there to cancel it). {@code position}: one the publisher side still keeps.
     */
    static void cancelWaiting(RtOptions o, String partition, String key, String run, long position) throws IOException {
        if (o.isEndpoint()) {
            if (o.resume) StreamReader.cancelRemote(o.endpoint(partition), o.readerSettings(), key, position);
        } else {
            JvmFeed.cancelIfPresent(key, run);
        }
    }

    /**
     * Stream {@code key} of partition {@code partition} at {@code position} for the query run {@code run}
     * (one per started query); {@code ack} (> 0) is acknowledged once it is open.
     */
    static RowFeed open(RtOptions o, String partition, StructType schema, String key, String run, long position, long ack)
            throws IOException {
        if (o.isEndpoint()) return EndpointFeed.open(o, partition, schema, key, position, ack);
        return JvmFeed.open(o, schema, key, run, position, ack);
    }
}
