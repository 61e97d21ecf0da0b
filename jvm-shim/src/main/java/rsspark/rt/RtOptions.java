package rsspark.rt;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import rsspark.rsocket.Connection;
import rsspark.rsocket.Endpoint;
import rsspark.rsocket.StreamReader;
import rsspark.rsocket.TlsSettings;

/**
 * The options of {@code format("reactive-rt")}, parsed and checked in one place (keys are
 * case-insensitive; an unknown key is an error that lists the known ones). Where an option of the
 * Python {@code reactive} source applies here it has the same name and meaning.
 */
public final class RtOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Options with this prefix are not checked: they are for the jvmPublisher factory (as in {@code reactive}). */
    static final String PASS_THROUGH = "publisher.";

    /** Known options and what they do (lower-cased key -> text; the order is the documentation's). */
    static final Map<String, String[]> KNOWN = new LinkedHashMap<>();

    static {
        known("endpoint", "an rs_spark.net address of a served Publisher of Arrow record batches (tcp://HOST:PORT/NAME, "
                + "tls://HOST:PORT/NAME or unix:///PATH/TO.sock/NAME); several, comma-separated (id=address names a "
                + "partition; else its endpoint name does), are partitions, each read by its own long-running task "
                + "(real-time mode)");
        known("jvmPublisher", "a JVM Publisher: com.example.Feeds#method (public static, no argument or a "
                + "Map<String, String> of the options) or a Publisher class; built in the JVM that reads it (its jar "
                + "on spark.jars)");
        known("token", "authentication token for the endpoint (else ?token= in the address)");
        for (Map.Entry<String, String> t : TlsSettings.OPTIONS.entrySet()) known(t.getKey(), t.getValue());
        known("schema", "DDL schema when none is given with .schema()");
        known("maxInFlight", "most rows requested from the publisher and not yet taken by Spark (default 1000)");
        known("maxRecordsPerTrigger", "micro-batch mode: at most this many rows per micro-batch");
        known("maxBufferedRecords", "micro-batch mode: most rows the driver holds; jvmPublisher: most rows kept "
                + "until Spark commits them (default 100000)");
        known("pollTimeout", "micro-batch mode: how long latestOffset waits for a first new row (default 500ms)");
        known("resumable", "true (default): read the endpoint as a resumable stream, lossless across restarts; false: "
                + "plain request-stream (a restart subscribes anew)");
        known("resumeWindow", "how long the server keeps the stream for a reader that comes back (default: the "
                + "server's Retention.window)");
        known("cancelOnStop", "true (default): stopping the query cancels the publisher; false: the stream waits "
                + "for a restarted query for resumeWindow");
        known("connectTimeout", "how long opening or resuming the stream may take (default 10s)");
        known("keepaliveInterval", "how often a task's connection sends KEEPALIVE (default 2s)");
        known("keepaliveTimeout", "how long a silent connection lives before it is taken as lost and resumed "
                + "(default 10s)");
        known("reconnectBackoff", "the first pause between tries to resume a lost connection, doubled each try, "
                + "with jitter (as Kafka's reconnect.backoff.ms) (default 100ms)");
        known("reconnectBackoffMax", "the longest pause between tries to resume (as Kafka's reconnect.backoff.max.ms); "
                + "tries go on for as long as the endpoint keeps the stream (default 10s)");
        known("path", "ignored (Spark passes it for .load(path))");
    }

    private static void known(String name, String text) {
        KNOWN.put(name.toLowerCase(Locale.ROOT), new String[] {name, text});
    }

    final String endpointAddress; // redacted never: it carries the token; shown only through Endpoint.toString
    /** Partition id -> address, in the given order; one endpoint is the single partition {@code ""}. */
    final LinkedHashMap<String, String> endpoints;
    final String jvmPublisher;
    final String token;
    final String schema;
    final int maxInFlight;
    final Long maxRecordsPerTrigger;
    final int maxBufferedRecords;
    final long pollTimeoutMs;
    final boolean resume;
    final double resumeWindow;
    final boolean cancelOnStop;
    final int connectTimeoutMs;
    final int keepaliveMs;
    final int keepaliveTimeoutMs;
    final long backoffFirstMs;
    final long backoffMaxMs;
    /** How a tls:// endpoint is trusted: options tlsCaFile, tlsCertFile, tlsKeyFile, tlsHostname. */
    final TlsSettings tls;
    /**
     * The jvmPublisher factory's argument: the options under {@code publisher.}, that prefix stripped,
     * keys in the case the user wrote them (as the Python source's factories get theirs).
     */
    final Map<String, String> factoryOptions;

    private RtOptions(Map<String, String> o, Map<String, String> factory) {
        factoryOptions = factory;
        endpointAddress = o.get("endpoint");
        endpoints = new LinkedHashMap<>();
        jvmPublisher = o.get("jvmpublisher");
        token = o.get("token");
        schema = o.get("schema");
        maxInFlight = (int) longOption(o, "maxInFlight", 1000, 1, 1 << 24);
        maxRecordsPerTrigger = o.containsKey("maxrecordspertrigger")
                ? longOption(o, "maxRecordsPerTrigger", 0, 1, Integer.MAX_VALUE) : null;
        maxBufferedRecords = (int) longOption(o, "maxBufferedRecords", 100_000, 1, Integer.MAX_VALUE);
        pollTimeoutMs = durationMs(o, "pollTimeout", 500);
        resume = bool(o, "resumable", true);
        cancelOnStop = bool(o, "cancelOnStop", true);
        resumeWindow = durationMs(o, "resumeWindow", 0) / 1000.0;
        connectTimeoutMs = (int) Math.min(Integer.MAX_VALUE, durationMs(o, "connectTimeout", 10_000));
        keepaliveMs = (int) Math.min(Integer.MAX_VALUE, durationMs(o, "keepaliveInterval", 2_000));
        keepaliveTimeoutMs = (int) Math.min(Integer.MAX_VALUE, durationMs(o, "keepaliveTimeout", 10_000));
        backoffFirstMs = durationMs(o, "reconnectBackoff", 100);
        backoffMaxMs = durationMs(o, "reconnectBackoffMax", 10_000);
        checkLink(o, keepaliveMs, keepaliveTimeoutMs, backoffFirstMs, backoffMaxMs, "format('reactive-rt')");
        tls = tlsSettings(o);
    }

    /** The same checks as Python's {@code rs_spark.spark.link_options.EndpointLink.parse}. */
    static void checkLink(Map<String, String> o, long keepaliveMs, long timeoutMs, long firstMs, long maxMs, String who) {
        if (timeoutMs <= keepaliveMs) {
            throw new IllegalArgumentException(who + ": option keepaliveTimeout='" + o.getOrDefault("keepalivetimeout", "10s")
                    + "' must be longer than keepaliveInterval='" + o.getOrDefault("keepaliveinterval", "2s") + "': a "
                    + "connection is lost after that long without a frame, and KEEPALIVE frames come every keepaliveInterval");
        }
        if (firstMs > maxMs) {
            throw new IllegalArgumentException(who + ": option reconnectBackoff='" + o.getOrDefault("reconnectbackoff", "100ms")
                    + "' is longer than reconnectBackoffMax='" + o.getOrDefault("reconnectbackoffmax", "10s")
                    + "'; the first pause cannot exceed the longest");
        }
    }

    private static TlsSettings tlsSettings(Map<String, String> o) {
        try {
            return TlsSettings.from(o);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("format('reactive-rt'): " + e.getMessage(), e);
        }
    }

    /** Parse and check {@code options} (any case); throws IllegalArgumentException saying what to fix. */
    public static RtOptions parse(Map<String, String> options) {
        Map<String, String> o = new TreeMap<>();
        Map<String, String> factory = new TreeMap<>();
        for (Map.Entry<String, String> e : options.entrySet()) {
            String k = e.getKey().toLowerCase(Locale.ROOT);
            if (!KNOWN.containsKey(k) && !k.startsWith(PASS_THROUGH)) throw unknown(e.getKey());
            o.put(k, e.getValue());
            if (k.startsWith(PASS_THROUGH) && k.length() > PASS_THROUGH.length()) {
                factory.put(e.getKey().substring(PASS_THROUGH.length()), e.getValue());
            }
        }
        RtOptions r = new RtOptions(o, factory);
        r.checkPublisher();
        if (r.maxRecordsPerTrigger != null && r.maxRecordsPerTrigger > r.maxBufferedRecords) {
            throw new IllegalArgumentException("format('reactive-rt'): option maxRecordsPerTrigger="
                    + r.maxRecordsPerTrigger + " exceeds maxBufferedRecords=" + r.maxBufferedRecords
                    + "; raise maxBufferedRecords or lower the limit");
        }
        return r;
    }

    private static IllegalArgumentException unknown(String key) {
        String k = key.toLowerCase(Locale.ROOT);
        String hint;
        switch (k) {
            case "publisher":
                hint = "a Python Publisher factory runs in the Python 'reactive' source only: serve the Publisher "
                        + "with rs_spark.net (rs_spark.spark.realtime.read_stream does) and give its address as "
                        + "option endpoint";
                break;
            case "jvmjars":
                hint = "the real-time source builds jvmPublisher in Spark's own JVMs: put its jar on spark.jars";
                break;
            case "logpath":
                hint = "offsets live in the query's checkpoint and rows in the server's retention until Spark commits";
                break;
            case "numpartitions":
                hint = "each endpoint is one partition, read by one long-running task: list several in option endpoint";
                break;
            case "minrecordspertrigger":
            case "maxtriggerdelay":
            case "prefetch":
            case "batchtransport":
            case "mode":
            case "failondataloss":
            case "columnnameofcorruptrecord":
                hint = "that option of the Python 'reactive' source does not apply to 'reactive-rt'";
                break;
            default:
                hint = "check its spelling";
        }
        StringBuilder names = new StringBuilder();
        for (String[] v : KNOWN.values()) names.append(names.length() == 0 ? "" : ", ").append(v[0]);
        return new IllegalArgumentException("format('reactive-rt') has no option '" + key + "' (" + hint
                + "). Its options: " + names + "; options starting with '" + PASS_THROUGH + "' reach the jvmPublisher factory");
    }

    private void checkPublisher() {
        boolean ep = endpointAddress != null && !endpointAddress.isBlank();
        boolean jvm = jvmPublisher != null && !jvmPublisher.isBlank();
        if (ep == jvm) {
            throw new IllegalArgumentException("format('reactive-rt') needs exactly one of option 'endpoint' (an "
                    + "rs_spark.net address, tcp://HOST:PORT/NAME, tls://... or unix://...) or option 'jvmPublisher' (com.example.Feeds#method); got "
                    + (ep ? "both" : "neither") + ". From Python, rs_spark.spark.realtime.read_stream(spark, publisher, "
                    + "schema=...) serves an in-process Publisher and sets option endpoint");
        }
        if (ep) { // now: a bad address or TLS option fails the query before it starts
            parseEndpoints();
            checkEndpoints();
        } else if (!tls.isDefault()) {
            throw new IllegalArgumentException("format('reactive-rt'): the TLS options (" + String.join(", ",
                    TlsSettings.OPTIONS.keySet()) + ") apply to a tls:// endpoint; option jvmPublisher reads no endpoint");
        }
        if (jvm && (jvmPublisher.contains(" ") || jvmPublisher.split("#")[0].contains(":"))) {
            throw new IllegalArgumentException("format('reactive-rt'): option jvmPublisher='" + jvmPublisher
                    + "' must look like 'com.example.Feeds#method' or 'com.example.FeedPublisher'");
        }
    }

    boolean isEndpoint() {
        return endpointAddress != null && !endpointAddress.isBlank();
    }

    private void parseEndpoints() {
        LinkedHashMap<String, String> out = parseEndpoints(endpointAddress, token);
        if (out.size() == 1) endpoints.put(SINGLE, out.values().iterator().next());
        else endpoints.putAll(out);
    }

    /**
     * Option endpoint, as the {@code reactive} source's {@code parse_endpoints} reads it: one address, or
     * several comma-separated, each {@code id=address} (the id a plain name: 1-64 letters, digits, '.', '_',
     * '-') or an address whose endpoint name is its partition id. Returns partition id -> address, in the
     * given order; throws IllegalArgumentException saying what to fix, never showing a token.
     */
    public static LinkedHashMap<String, String> parseEndpoints(String value, String token) {
        LinkedHashMap<String, String> out = new LinkedHashMap<>();
        for (String raw : value.split(",")) {
            String item = raw.trim();
            if (item.isEmpty()) continue;
            String[] split = Endpoint.splitEndpoint(item);
            String pid = split[0];
            String address = split[1];
            if (pid != null && !PARTITION_ID.matcher(pid).matches()) throw badId(pid);
            String name;
            try {
                name = Endpoint.parse(address, token).name;
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("format('reactive-rt'): option endpoint: " + e.getMessage()
                        + (pid == null && item.contains("=") ? ID_HINT : ""), e);
            }
            if (pid == null) pid = name == null ? "" : name;
            if (pid.isEmpty()) {
                throw new IllegalArgumentException("format('reactive-rt'): option endpoint: " + Endpoint.redact(address)
                        + " names no endpoint; give each partition an id (id=address) or an address with an endpoint name");
            }
            if (!PARTITION_ID.matcher(pid).matches()) throw badId(pid);
            if (out.put(pid, address) != null) {
                throw new IllegalArgumentException("format('reactive-rt'): option endpoint names partition '" + pid
                        + "' twice; give each one its own id (id=address)");
            }
        }
        if (out.isEmpty()) throw new IllegalArgumentException("format('reactive-rt'): option endpoint names no address");
        return out;
    }

    static final String ID_HINT = " (in id=address, an id is 1-64 letters, digits, '.', '_' or '-'; else the item is "
            + "read as an address)";

    private static IllegalArgumentException badId(String pid) {
        return new IllegalArgumentException("format('reactive-rt'): option endpoint: partition id '" + pid + "' must "
                + "be 1-64 letters, digits, '.', '_' or '-' (it is kept in the checkpoint's offsets)");
    }

    /** The partition id of a source that reads one publisher (its offset is {@code {"key", "position"}}). */
    static final String SINGLE = "";
    static final java.util.regex.Pattern PARTITION_ID = java.util.regex.Pattern.compile("[A-Za-z0-9._-]{1,64}");

    /** The partitions this source reads: the endpoints' ids, or {@link #SINGLE}. */
    java.util.List<String> partitions() {
        return endpoints.isEmpty() ? java.util.List.of(SINGLE) : java.util.List.copyOf(endpoints.keySet());
    }

    /** The endpoint of partition {@code pid}. */
    Endpoint endpoint(String pid) {
        String address = endpoints.get(pid);
        if (address == null) throw new IllegalArgumentException("format('reactive-rt') reads no partition '" + pid + "'");
        return Endpoint.parse(address, token);
    }

    private void checkEndpoints() {
        for (String pid : partitions()) {
            Endpoint e = endpoint(pid);
            try {
                tls.checkUsedBy(e);
                if (e.scheme.equals("tls")) tls.context(); // the files are read and checked here, on the driver
            } catch (IllegalArgumentException x) {
                throw new IllegalArgumentException("format('reactive-rt'): " + x.getMessage(), x);
            }
        }
    }

    /** The stream reader's settings (public: tests/realtime compares them with the Python source's options). */
    public StreamReader.Settings readerSettings() {
        StreamReader.Settings s = new StreamReader.Settings();
        s.maxInFlight = maxInFlight;
        s.windowSeconds = resumeWindow;
        s.backoffFirstMs = backoffFirstMs;
        s.backoffMaxMs = backoffMaxMs;
        Connection.Options c = new Connection.Options();
        c.connectTimeoutMs = connectTimeoutMs;
        c.keepaliveMs = keepaliveMs;
        c.lifetimeMs = keepaliveTimeoutMs;
        c.tls = tls;
        s.connection = c;
        return s;
    }

    /** What the source reads, for messages (never the token). */
    String describe() {
        if (!isEndpoint()) return "JVM publisher " + jvmPublisher;
        if (endpoints.size() == 1) return describe(SINGLE);
        StringBuilder b = new StringBuilder("remote publishers");
        for (String pid : endpoints.keySet()) b.append(b.length() > 17 ? ", " : " ").append(pid).append('=').append(endpoint(pid));
        return b.toString();
    }

    /** Partition {@code pid}'s publisher, for messages (never the token). */
    String describe(String pid) {
        if (!isEndpoint()) return "JVM publisher " + jvmPublisher;
        return "remote publisher " + endpoint(pid) + (SINGLE.equals(pid) ? "" : " (partition " + pid + ")");
    }

    // -- value parsers ----------------------------------------------------------------------------
    private static long longOption(Map<String, String> o, String name, long dflt, long min, long max) {
        String v = o.get(name.toLowerCase(Locale.ROOT));
        if (v == null) return dflt;
        try {
            long x = Long.parseLong(v.trim());
            if (x >= min && x <= max) return x;
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("format('reactive-rt'): option " + name + "='" + v + "' must be an integer in "
                + min + ".." + max);
    }

    /** Option {@code name} ({@code dflt} when absent), in the grammar of {@link Booleans}. */
    private static boolean bool(Map<String, String> o, String name, boolean dflt) {
        String v = o.get(name.toLowerCase(Locale.ROOT));
        if (v == null) return dflt;
        try {
            return Booleans.parse(name, v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("format('reactive-rt'): " + e.getMessage(), e);
        }
    }

    /** Option {@code name} in whole milliseconds ({@code dfltMs} when absent), in the grammar of {@link Durations}. */
    static long durationMs(Map<String, String> o, String name, long dfltMs) {
        String v = o.get(name.toLowerCase(Locale.ROOT));
        if (v == null) return dfltMs;
        try {
            return Durations.wholeMillis(name, v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("format('reactive-rt'): " + e.getMessage(), e);
        }
    }
}
