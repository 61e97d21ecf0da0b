package rsspark.jvm;

/** Entry points for the Python side (rs_spark.jvm), one static call each. */
public final class Shim {
    private Shim() {}

    /**
     * The rs_spark version this jar was built for: its manifest's {@code Implementation-Version}
     * (jvm-shim/build writes pyproject.toml's version there), or null for classes not loaded from
     * that jar. rs_spark.jvm.gateway compares it with the Python package's version.
     */
    public static String version() {
        return Shim.class.getPackage().getImplementationVersion();
    }

    /** Where this JVM loaded the shim from (a jar path or a classes directory), for error messages. */
    public static String location() {
        java.security.CodeSource src = Shim.class.getProtectionDomain().getCodeSource();
        return src == null ? "unknown" : String.valueOf(src.getLocation());
    }

    /** JVM Publisher (Flow or org.reactivestreams) -> a bridge Python polls for Arrow batches. */
    public static PublisherBridge pull(Object publisher, String schema) {
        return new PublisherBridge(publisher, schema);
    }

    /** Tell {@code publisher} rows before {@code position} are committed, if it is {@link Committable}. */
    public static boolean commit(Object publisher, long position) {
        if (publisher instanceof Committable c) {
            c.onCommit(position);
            return true;
        }
        return false;
    }

    /** A unicast Flow.Publisher fed from Python with Arrow batches, elements decoded as {@code kind}. */
    public static FeedPublisher feed(String kind) {
        return new FeedPublisher(kind);
    }

    /** {@link #feed} already subscribed by {@code subscriber} (Flow or org.reactivestreams). */
    public static FeedPublisher feedInto(Object subscriber, String kind) {
        FeedPublisher p = new FeedPublisher(kind);
        p.subscribe(Interop.toFlowSubscriber(subscriber));
        return p;
    }

    /**
     * The Publisher {@code spec} names: {@code "com.example.Feeds#quotes"} (a public static method
     * taking nothing or a {@code Map<String, String>} of options) or a Publisher class. See {@link Factories}.
     */
    public static Object publisher(String spec, java.util.Map<String, String> options) {
        return Factories.publisher(spec, options);
    }

    /** The schema a class declares, as spec text ("value:int64", "id:int64,name:string", ...). */
    public static String schemaOf(String className) {
        return Schemas.format(Schemas.of(BatchDecoder.load(className)));
    }

    public static boolean reactiveStreamsAvailable() {
        return Interop.reactiveStreamsAvailable();
    }

    public static long allocatedBytes() {
        return Memory.allocated();
    }
}
