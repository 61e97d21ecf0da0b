package rsspark.rt;

import java.util.Locale;

/**
 * The one boolean grammar of every boolean option, the same as Python's
 * {@code rs_spark.spark.options.parse_bool} (tests/realtime/test_durations.py parses one list of
 * strings on both sides and compares): {@code true} or {@code false} in any case, surrounding
 * spaces ignored, as Spark reads its own boolean options; nothing else ({@code yes}, {@code 1},
 * {@code on} are refused rather than guessed).
 */
public final class Booleans {
    private Booleans() {}

    /** Option {@code name}'s {@code value}; IllegalArgumentException says what to write. */
    public static boolean parse(String name, String value) {
        switch (value.strip().toLowerCase(Locale.ROOT)) {
            case "true":
                return true;
            case "false":
                return false;
            default:
                throw new IllegalArgumentException("option " + name + "='" + value + "' is not a boolean: use true or false");
        }
    }
}
