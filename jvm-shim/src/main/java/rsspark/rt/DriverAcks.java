package rsspark.rt;

import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

import rsspark.rsocket.Connection;
import rsspark.rsocket.Endpoint;
import rsspark.rsocket.Frame;
import rsspark.rsocket.Frames;
import rsspark.rsocket.Metadata;

/**
 * The driver's acknowledgements: when Spark commits a batch, each partition's stream is told at once
 * that the rows before its committed position are durable, on a connection of the driver's own (SETUP
 * with the endpoint's token, then {@code METADATA_PUSH} with the position and the stream's key,
 * {@code message/x.rs-spark.stream.v1}), not on the stream's connection, which a task on an executor
 * holds. So the server frees the rows within one batch of Spark's commit, wherever the tasks run.
 *
 * <p>One connection per endpoint, opened on the first commit and kept; acknowledgements leave in
 * order from one thread, so {@code commit} never waits for the network. A failed one is logged once
 * per connection and dropped: the next batch's task acknowledges the committed position when it
 * opens the stream, as before.
 */
final class DriverAcks implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger("rsspark.rt");

    private final RtOptions o;
    private final ExecutorService sender;
    private final Map<String, Connection> connections = new HashMap<>(); // endpoint base -> connection (sender thread)
    private volatile long sent;

    DriverAcks(RtOptions o) {
        this.o = o;
        this.sender = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "rs-spark-rt-acks");
            t.setDaemon(true);
            return t;
        });
    }

    /** Acknowledge {@code position} of partition {@code partition}'s stream {@code key} (soon, in order). */
    void acknowledge(String partition, String key, long position) {
        if (!o.isEndpoint() || !o.resume || position <= 0) return;
        try {
            sender.execute(() -> send(partition, key, position));
        } catch (RejectedExecutionException e) {
            // stopped: the query ends; a restarted query's first task acknowledges on opening
        }
    }

    /** Acknowledgements sent so far (for tests and metrics). */
    long sent() {
        return sent;
    }

    private void send(String partition, String key, long position) {
        Endpoint ep = o.endpoint(partition);
        try {
            connection(ep).send(Frames.metadataPush(Metadata.commitOf(key, position)));
            sent++;
        } catch (IOException | RuntimeException e) {
            Connection c = connections.remove(ep.base());
            if (c != null) c.close(null);
            LOG.warn("{}: acknowledging position {} of stream {} failed ({}); the next batch's task acknowledges it "
                    + "when it opens the stream", o.describe(partition), position, key, e.getMessage());
        }
    }

    private Connection connection(Endpoint ep) throws IOException {
        Connection c = connections.get(ep.base());
        if (c != null && !c.isClosed()) return c;
        Connection.Options co = o.readerSettings().connection;
        c = Connection.dial(ep, co, new Connection.Listener() {
            @Override
            public void onFrame(Frame frame) {
                // the server's answers (retention counts) are not needed here
            }

            @Override
            public void onClosed(IOException why) {
                if (why != null) LOG.debug("{}: the acknowledgement connection closed: {}", ep, why.getMessage());
            }
        });
        c.send(Frames.setup(co.keepaliveMs, co.lifetimeMs, Metadata.COMPOSITE, Metadata.ARROW_MIME,
                Metadata.setup(ep.token, List.of()), null));
        c.start();
        connections.put(ep.base(), c);
        return c;
    }

    @Override
    public void close() {
        sender.shutdown();
        try {
            sender.execute(() -> { });
        } catch (RejectedExecutionException e) {
            // shut down: the close below runs on this thread
        }
        try {
            sender.awaitTermination(2, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Connection c : connections.values()) c.close(null);
        connections.clear();
    }
}
