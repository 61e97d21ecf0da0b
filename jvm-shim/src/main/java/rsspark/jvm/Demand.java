package rsspark.jvm;

/** Demand arithmetic: saturating at Long.MAX_VALUE (rule 3.17), like rs_spark.streams.demand. */
public final class Demand {
    private Demand() {}

    public static long addCap(long a, long b) {
        long r = a + b;
        return r < 0 ? Long.MAX_VALUE : r;
    }

    public static IllegalArgumentException invalid(long n) {
        return new IllegalArgumentException("request(" + n + ") is illegal: rule 3.9 requires a positive number "
                + "of elements. Call request(n) with n > 0; to stop receiving elements call cancel().");
    }
}
