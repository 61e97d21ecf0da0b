package rsspark.rt;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/**
 * An offset of {@code reactive-rt}: the query's stream key and, per partition, a position counting
 * that partition's rows. As JSON (Spark compares offsets as JSON text: keep it stable):
 * <ul>
 * <li>one publisher: {@code {"key":"<32 hex digits>","position":N}} (what the single-partition
 * source wrote: its checkpoints keep working);
 * <li>several endpoints: {@code {"key":"<32 hex digits>","positions":{"a":N,"b":M}}}, ids sorted;
 * partition {@code a} reads the stream {@link #streamKey streamKey(key, "a")}.
 * </ul>
 */
final class RtOffset extends Offset {
    private static final Pattern SINGLE = Pattern.compile(
            "\\s*\\{\\s*\"key\"\\s*:\\s*\"([0-9a-f]{32})\"\\s*,\\s*\"position\"\\s*:\\s*([0-9]{1,18})\\s*}\\s*");
    private static final Pattern SEVERAL = Pattern.compile(
            "\\s*\\{\\s*\"key\"\\s*:\\s*\"([0-9a-f]{32})\"\\s*,\\s*\"positions\"\\s*:\\s*\\{([^{}]*)}\\s*}\\s*");
    private static final Pattern ENTRY = Pattern.compile("\\s*\"([A-Za-z0-9._-]{1,64})\"\\s*:\\s*([0-9]{1,18})\\s*");

    final String key;
    /** Partition id -> position; one publisher: {@code {"": position}} ({@link RtOptions#SINGLE}). */
    final Map<String, Long> positions;
    /** One publisher's position (-1 with several partitions). */
    final long position;

    RtOffset(String key, long position) {
        this(key, Map.of(RtOptions.SINGLE, position));
    }

    RtOffset(String key, Map<String, Long> positions) {
        if (positions.isEmpty()) throw new IllegalArgumentException("an offset of format('reactive-rt') needs a partition");
        this.key = key;
        this.positions = Collections.unmodifiableMap(new TreeMap<>(positions));
        Long single = positions.size() == 1 ? positions.get(RtOptions.SINGLE) : null;
        this.position = single == null ? -1 : single;
    }

    boolean isSingle() {
        return position >= 0;
    }

    /** Partition {@code pid}'s position (IllegalStateException naming both sides when the offset has none). */
    long position(String pid) {
        Long p = positions.get(pid);
        if (p == null) {
            throw new IllegalStateException("the checkpoint's offset " + json() + " has no position for "
                    + (RtOptions.SINGLE.equals(pid) ? "a single endpoint" : "partition '" + pid + "'")
                    + ": option endpoint names other partitions than the query that wrote the checkpoint read; "
                    + "restore option endpoint, or start from a new checkpointLocation");
        }
        return p;
    }

    static RtOffset parse(String json) {
        Matcher m = json == null ? null : SINGLE.matcher(json);
        if (m != null && m.matches()) return new RtOffset(m.group(1), Long.parseLong(m.group(2)));
        Matcher s = json == null ? null : SEVERAL.matcher(json);
        if (s != null && s.matches()) {
            Map<String, Long> positions = new TreeMap<>();
            for (String entry : s.group(2).split(",")) {
                Matcher e = ENTRY.matcher(entry);
                if (!e.matches() || positions.put(e.group(1), Long.parseLong(e.group(2))) != null) return refuse(json);
            }
            return new RtOffset(s.group(1), positions);
        }
        return refuse(json);
    }

    private static RtOffset refuse(String json) {
        throw new IllegalArgumentException("'" + json + "' is not an offset of format('reactive-rt') "
                + "({\"key\":\"<32 hex digits>\",\"position\":N} or {\"key\":...,\"positions\":{\"id\":N,...}}); was "
                + "this checkpoint written by another source?");
    }

    @Override
    public String json() {
        if (isSingle()) return "{\"key\":\"" + key + "\",\"position\":" + position + "}";
        StringBuilder b = new StringBuilder("{\"key\":\"").append(key).append("\",\"positions\":{");
        String sep = "";
        for (Map.Entry<String, Long> e : positions.entrySet()) {
            b.append(sep).append('"').append(e.getKey()).append("\":").append(e.getValue());
            sep = ",";
        }
        return b.append("}}").toString();
    }

    /**
     * The key of partition {@code pid}'s stream: the query's key for one publisher (as before
     * partitions existed), else 32 hex digits of SHA-256 over the query's key and the id.
     */
    static String streamKey(String key, String pid) {
        if (RtOptions.SINGLE.equals(pid)) return key;
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(
                    ("rs_spark rt partition|" + key + "|" + pid).getBytes(StandardCharsets.UTF_8));
            StringBuilder hex = new StringBuilder(32);
            for (int i = 0; i < 16; i++) hex.append(String.format("%02x", d[i]));
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /** Where one partition's reader stopped: the position after the last row it handed to Spark. */
    record Partition(String partition, String key, long position) implements PartitionOffset {}
}
