package rsspark.rt;

import java.io.IOException;

import org.apache.spark.sql.types.StructType;

import rsspark.rsocket.StreamReader;

/** A publisher served by rs_spark.net, read with {@link StreamReader} (resumable unless option resumable=false). */
final class EndpointFeed implements RowFeed {
    private final StreamReader<Chunk> reader;

    private EndpointFeed(StreamReader<Chunk> reader) {
        this.reader = reader;
    }

    /** Open partition {@code partition}'s stream {@code key} at {@code position}; {@code ack} (> 0) is acknowledged once open. */
    static EndpointFeed open(RtOptions o, String partition, StructType schema, String key, long position, long ack)
            throws IOException {
        ArrowRows decoder = new ArrowRows(schema, Feeds.allocator(), o.describe(partition));
        StreamReader.Mode mode = o.resume ? StreamReader.Mode.RESUMABLE : StreamReader.Mode.PLAIN;
        return new EndpointFeed(StreamReader.open(o.endpoint(partition), o.readerSettings(), decoder, mode, key, position,
                ack));
    }

    @Override
    public Chunk poll(long timeoutNanos) throws IOException {
        return reader.poll(timeoutNanos);
    }

    @Override
    public boolean isComplete() {
        return reader.isComplete();
    }

    @Override
    public void acknowledge(long position) throws IOException {
        reader.acknowledge(position);
    }

    @Override
    public void cancel() {
        reader.cancel();
    }

    @Override
    public void detach() {
        reader.detach();
    }

    @Override
    public String where() {
        return reader.where();
    }
}
