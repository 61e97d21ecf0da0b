package rsspark.jvm;

/** Entry points for the Python side (rs_spark.jvm), one static call each. */
public final class Shim {
    public static final String VERSION = "0.1.0";

    private Shim() {}

    public static String version() {
        return VERSION;
    }

    /** JVM Publisher (Flow or org.reactivestreams) -> a bridge Python polls for Arrow batches. */
    public static PublisherBridge pull(Object publisher, String schema) {
        return new PublisherBridge(publisher, schema);
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

    /** The baseline: a bridge that hands over one element per call. */
    public static NaiveBridge naive(Object publisher, int prefetch) {
        return new NaiveBridge(Interop.toFlowPublisher(publisher), prefetch);
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
