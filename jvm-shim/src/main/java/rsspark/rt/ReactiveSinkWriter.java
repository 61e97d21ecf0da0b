package rsspark.rt;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import rsspark.rsocket.Endpoint;
import rsspark.rsocket.TlsSettings;

/**
 * The sink of real-time mode: a {@code ForeachWriter} (Spark's real-time allowlist admits
 * {@code writeStream.foreach}), which streams each task's rows, as they come, into a Subscriber
 * served by {@code rs_spark.serve_sink} / {@code rs_spark.write_stream} (the delivery hub).
 *
 * <p>Per task ({@code open(partition, epoch)} .. {@code close}) one request-channel carries the
 * rows as Arrow payloads, tagged with the epoch (Spark's batch id), the row's index within the
 * task, and "open-ended" (the epoch's row count is known only at its end). Rows leave within the
 * credits the hub grants, and the hub hands them to the Subscriber within its demand; a slow
 * Subscriber slows the task. {@code close} sends the end of the epoch and waits until the hub
 * answers that every row reached {@code on_next}.
 *
 * <p>Several partitions: each task's channel is tagged with its partition; the hub delivers the
 * partitions side by side into the one Subscriber, each in order.
 *
 * <p>Guarantee: the hub's ledger remembers, per partition, how many rows of its current epoch
 * reached the Subscriber, and skips that many when Spark runs the epoch again (a retried task, a
 * restarted query): exactly once when each partition replays the same rows from the epoch's start
 * offset (a {@code reactive-rt} source on resumable endpoints, with deterministic transformations
 * that keep rows in their partition); otherwise at least once per position (see docs/realtime.md).
 */
public final class ReactiveSinkWriter extends ForeachWriter<Row> {
    private static final long serialVersionUID = 1L;

    private final String endpoint; // carries the token: never shown (Endpoint.toString drops it)
    private final String schemaJson;
    private final SinkOptions options;
    private transient SinkChannel channel;

    private ReactiveSinkWriter(String endpoint, String schemaJson, SinkOptions options) {
        this.endpoint = endpoint;
        this.schemaJson = schemaJson;
        this.options = options;
    }

    /**
     * A writer for {@code df.writeStream.foreach(...)}: {@code endpoint} from {@code serve_sink} /
     * the hub, {@code schemaJson} the DataFrame's schema ({@code df.schema.json()}), {@code options}
     * (case-insensitive): maxRowsPerPayload, maxQueuedRows, ackTimeout, connectTimeout, keepaliveInterval,
     * keepaliveTimeout, reconnectBackoff, reconnectBackoffMax, reconnectTimeout, maxRetainedRows, and for a
     * tls:// endpoint tlsCaFile, tlsCertFile, tlsKeyFile, tlsHostname.
     */
    public static ReactiveSinkWriter create(String endpoint, String schemaJson, Map<String, String> options) {
        Endpoint e = Endpoint.parse(endpoint, null); // a bad address fails here, before the query starts
        DataType t = DataType.fromJson(schemaJson);
        if (!(t instanceof StructType)) throw new IllegalArgumentException("the sink's schema must be a struct, got " + t);
        SinkOptions o = SinkOptions.parse(options);
        try {
            o.tls.checkUsedBy(e);
            if (e.scheme.equals("tls")) o.tls.context(); // the files are read and checked here, on the driver
        } catch (IllegalArgumentException x) {
            throw new IllegalArgumentException("the real-time reactive sink: " + x.getMessage(), x);
        }
        return new ReactiveSinkWriter(endpoint, schemaJson, o);
    }

    @Override
    public boolean open(long partitionId, long epochId) {
        try {
            channel = SinkChannel.open(Endpoint.parse(endpoint, null), (StructType) DataType.fromJson(schemaJson),
                    options, partitionId, epochId);
        } catch (IOException e) {
            throw new UncheckedIOException("the reactive sink cannot reach its Subscriber: " + e.getMessage(), e);
        }
        return true;
    }

    @Override
    public void process(Row row) {
        try {
            channel.add(row);
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    @Override
    public void close(Throwable errorOrNull) {
        SinkChannel c = channel;
        channel = null;
        if (c == null) return;
        if (errorOrNull != null) {
            c.abort("the Spark task failed: " + errorOrNull);
            return;
        }
        try {
            c.finish();
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    /** The sink's options, parsed once on the driver. */
    static final class SinkOptions implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        int maxRowsPerPayload = 4096;
        int maxQueuedRows = 10_000;
        long ackTimeoutMs = 600_000;
        int connectTimeoutMs = 10_000;
        int keepaliveMs = 2_000;
        int keepaliveTimeoutMs = 10_000;
        long backoffFirstMs = 100;
        long backoffMaxMs = 10_000;
        long reconnectTimeoutMs = 600_000;
        int maxRetainedRows = 100_000;
        TlsSettings tls = new TlsSettings(null, null, null, null);

        static SinkOptions parse(Map<String, String> given) {
            Map<String, String> o = new TreeMap<>();
            if (given != null) for (Map.Entry<String, String> e : given.entrySet()) o.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
            SinkOptions s = new SinkOptions();
            java.util.Set<String> known = new java.util.HashSet<>(java.util.List.of("maxrowsperpayload", "maxqueuedrows",
                    "acktimeout", "connecttimeout", "keepaliveinterval", "keepalivetimeout", "reconnectbackoff",
                    "reconnectbackoffmax", "reconnecttimeout", "maxretainedrows"));
            for (String n : TlsSettings.OPTIONS.keySet()) known.add(n.toLowerCase(Locale.ROOT));
            for (String k : o.keySet()) {
                if (!known.contains(k)) {
                    throw new IllegalArgumentException("the real-time reactive sink has no option '" + k
                            + "'; its options: maxRowsPerPayload, maxQueuedRows, ackTimeout, connectTimeout, "
                            + "keepaliveInterval, keepaliveTimeout, reconnectBackoff, reconnectBackoffMax, "
                            + "reconnectTimeout, maxRetainedRows, "
                            + String.join(", ", TlsSettings.OPTIONS.keySet()));
                }
            }
            s.maxRowsPerPayload = (int) intOption(o, "maxRowsPerPayload", s.maxRowsPerPayload);
            s.maxQueuedRows = (int) intOption(o, "maxQueuedRows", s.maxQueuedRows);
            s.ackTimeoutMs = durationMs(o, "ackTimeout", s.ackTimeoutMs);
            s.connectTimeoutMs = (int) Math.min(Integer.MAX_VALUE, durationMs(o, "connectTimeout", s.connectTimeoutMs));
            s.keepaliveMs = (int) Math.min(Integer.MAX_VALUE, durationMs(o, "keepaliveInterval", s.keepaliveMs));
            s.keepaliveTimeoutMs = (int) Math.min(Integer.MAX_VALUE, durationMs(o, "keepaliveTimeout", s.keepaliveTimeoutMs));
            s.backoffFirstMs = durationMs(o, "reconnectBackoff", s.backoffFirstMs);
            s.backoffMaxMs = durationMs(o, "reconnectBackoffMax", s.backoffMaxMs);
            s.reconnectTimeoutMs = durationMs(o, "reconnectTimeout", s.reconnectTimeoutMs);
            s.maxRetainedRows = (int) intOption(o, "maxRetainedRows", s.maxRetainedRows);
            RtOptions.checkLink(o, s.keepaliveMs, s.keepaliveTimeoutMs, s.backoffFirstMs, s.backoffMaxMs,
                    "the real-time reactive sink");
            try {
                s.tls = TlsSettings.from(o);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("the real-time reactive sink: " + e.getMessage(), e);
            }
            return s;
        }

        /** Option {@code name} in whole milliseconds, in the grammar of {@link Durations}. */
        private static long durationMs(Map<String, String> o, String name, long dfltMs) {
            String v = o.get(name.toLowerCase(Locale.ROOT));
            if (v == null) return dfltMs;
            try {
                return Durations.wholeMillis(name, v);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("the real-time reactive sink: " + e.getMessage(), e);
            }
        }

        private static long intOption(Map<String, String> o, String name, long dflt) {
            String v = o.get(name.toLowerCase(Locale.ROOT));
            if (v == null) return dflt;
            try {
                long x = Long.parseLong(v.trim());
                if (x >= 1 && x <= 1 << 24) return x;
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException("the real-time reactive sink: option " + name + "='" + v
                    + "' must be an integer in 1.." + (1 << 24));
        }
    }
}
