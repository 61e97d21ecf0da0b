package rsspark.rt;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one duration grammar of every duration option, the same as Python's
 * {@code rs_spark.spark.durations} (tests/realtime/test_durations.py parses one list of strings on
 * both sides and compares): one or more {@code <number><unit>} terms ({@code 500ms}, {@code 30s},
 * {@code 10min}, {@code 1h}, {@code 1h 30min}), units short or as Spark's interval words
 * ({@code 10 seconds}, {@code 2 hours}), optionally after {@code interval}. A bare number is refused.
 */
public final class Durations {
    private Durations() {}

    /** Unit word -> milliseconds per unit. */
    static final Map<String, Double> UNITS = new HashMap<>();

    /** Option name -> {least milliseconds, that bound as written, why}. */
    static final Map<String, Object[]> MINIMUMS = new HashMap<>();

    private static final Pattern TERM = Pattern.compile("([0-9]+(?:\\.[0-9]+)?) *([a-z]+)");
    private static final Pattern NUMBER = Pattern.compile("[0-9]+(?:\\.[0-9]+)?");
    private static final String EXAMPLES = "'500ms', '30s', '10min', '1h' or '10 seconds'";

    static {
        units(0.001, "us", "micro", "micros", "microsecond", "microseconds");
        units(1.0, "ms", "milli", "millis", "millisecond", "milliseconds", "msec", "msecs");
        units(1000.0, "s", "sec", "secs", "second", "seconds");
        units(60_000.0, "m", "min", "mins", "minute", "minutes");
        units(3_600_000.0, "h", "hr", "hrs", "hour", "hours");
        units(86_400_000.0, "d", "day", "days");
        units(604_800_000.0, "w", "week", "weeks");
        minimum("pollTimeout", 10.0, "10ms", "planning waits this long for requested records; shorter makes it a busy loop");
        minimum("maxTriggerDelay", 10.0, "10ms",
                "a smaller batch runs after this long; shorter makes minRecordsPerTrigger run every batch at once");
        minimum("resumeWindow", 1000.0, "1s", "a restarted query reconnects after seconds; a shorter window ends the "
                + "zero-loss guarantee at the first restart");
        minimum("commitTimeout", 1000.0, "1s", "a commit waits for the Subscriber's demand; shorter fails healthy commits");
        minimum("ackTimeout", 1000.0, "1s", "a task's end waits for the Subscriber; shorter fails healthy tasks");
        minimum("connectTimeout", 100.0, "100ms", "a connection takes a round trip and a handshake");
        minimum("keepSubscriberOnAbort", 1000.0, "1s", "a restarted query needs longer than that to resume; use false, "
                + "true (10min) or a window of at least 1s, e.g. '10min'"); // the Python sink's option: one table on both sides
        minimum("keepaliveInterval", 100.0, "100ms", "KEEPALIVE frames more often than that cost without telling more");
        minimum("keepaliveTimeout", 1000.0, "1s",
                "a busy but healthy peer may answer a second late; shorter takes it for lost and reconnects");
        minimum("reconnectBackoff", 10.0, "10ms", "tries closer together make a busy loop against an unreachable endpoint");
        minimum("reconnectBackoffMax", 10.0, "10ms",
                "tries closer together make a busy loop against an unreachable endpoint");
        minimum("reconnectTimeout", 1000.0, "1s", "reconnecting takes a few round trips; shorter fails at the first blip");
    }

    private static void units(double ms, String... words) {
        for (String w : words) UNITS.put(w, ms);
    }

    private static void minimum(String name, double ms, String shown, String why) {
        MINIMUMS.put(name, new Object[] {ms, shown, why});
    }

    /** Option {@code name}'s {@code value} in milliseconds; IllegalArgumentException says what to write. */
    public static double millis(String name, String value) {
        String text = value.strip().toLowerCase(Locale.ROOT);
        String shown = "option " + name + "='" + value + "'";
        if (NUMBER.matcher(text).matches()) {
            throw new IllegalArgumentException(shown + ": a duration needs a unit, e.g. '" + text + "s' or '" + text
                    + "ms' (units: ms, s, min, h, d or Spark's words: milliseconds, seconds, minutes, hours, days)");
        }
        String body = text.startsWith("interval ") ? text.substring("interval".length()).strip() : text;
        double total = 0;
        int pos = 0;
        Matcher m = TERM.matcher(body);
        if (body.isEmpty()) throw notADuration(shown);
        while (pos < body.length()) { // term by term, as Python's duration_ms does
            if (!m.region(pos, body.length()).lookingAt()) throw notADuration(shown);
            Double per = UNITS.get(m.group(2));
            if (per == null) {
                throw new IllegalArgumentException(shown + ": unknown unit '" + m.group(2) + "'; write e.g. " + EXAMPLES);
            }
            total += Double.parseDouble(m.group(1)) * per;
            pos = m.end();
            while (pos < body.length() && body.charAt(pos) == ' ') pos++;
        }
        Object[] bound = MINIMUMS.get(name);
        if (bound != null && total < (Double) bound[0]) {
            throw new IllegalArgumentException(shown + " is below its minimum of " + bound[1] + ": " + bound[2]);
        }
        return total;
    }

    /** {@link #millis} rounded down to whole milliseconds. */
    public static long wholeMillis(String name, String value) {
        return (long) millis(name, value);
    }

    private static IllegalArgumentException notADuration(String shown) {
        return new IllegalArgumentException(shown + " is not a duration; write e.g. " + EXAMPLES);
    }
}
