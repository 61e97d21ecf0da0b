package rsspark.rt;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/**
 * An offset of {@code reactive-rt}: the stream's key and a position counting its rows, as JSON
 * {@code {"key":"<32 hex digits>","position":N}} (Spark compares offsets as JSON text: keep it stable).
 */
final class RtOffset extends Offset {
    private static final Pattern JSON = Pattern.compile(
            "\\s*\\{\\s*\"key\"\\s*:\\s*\"([0-9a-f]{32})\"\\s*,\\s*\"position\"\\s*:\\s*([0-9]{1,18})\\s*}\\s*");

    final String key;
    final long position;

    RtOffset(String key, long position) {
        this.key = key;
        this.position = position;
    }

    static RtOffset parse(String json) {
        Matcher m = json == null ? null : JSON.matcher(json);
        if (m == null || !m.matches()) {
            throw new IllegalArgumentException("'" + json + "' is not an offset of format('reactive-rt') "
                    + "({\"key\":\"<32 hex digits>\",\"position\":N}); was this checkpoint written by another source?");
        }
        return new RtOffset(m.group(1), Long.parseLong(m.group(2)));
    }

    @Override
    public String json() {
        return "{\"key\":\"" + key + "\",\"position\":" + position + "}";
    }

    /** Where one partition's reader stopped: the position after the last row it handed to Spark. */
    static final class Partition implements PartitionOffset {
        private static final long serialVersionUID = 1L;
        final String key;
        final long position;

        Partition(String key, long position) {
            this.key = key;
            this.position = position;
        }
    }
}
