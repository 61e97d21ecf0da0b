package rsspark.jvm;

import java.util.concurrent.Flow;

/**
 * Flow is the core; {@code org.reactivestreams} Publishers and Subscribers are accepted when that
 * API is on the classpath, bridged with its {@code FlowAdapters}. Nothing here needs it otherwise.
 */
public final class Interop {
    private Interop() {}

    private static final boolean RS = present("org.reactivestreams.FlowAdapters");

    private static boolean present(String name) {
        try {
            Class.forName(name, false, Interop.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) { // present but not linkable (another version): absent
            return false;
        }
    }

    /** True when the org.reactivestreams API (with FlowAdapters, 1.0.3+) is on the classpath. */
    public static boolean reactiveStreamsAvailable() {
        return RS;
    }

    @SuppressWarnings("unchecked")
    public static Flow.Publisher<Object> toFlowPublisher(Object p) {
        if (p == null) throw new NullPointerException("publisher is null (rule 1.9)");
        if (p instanceof Flow.Publisher) return (Flow.Publisher<Object>) p;
        if (RS && RsAdapters.isPublisher(p)) return RsAdapters.toFlowPublisher(p);
        throw new IllegalArgumentException(p.getClass().getName() + " is neither a java.util.concurrent.Flow.Publisher"
                + (RS ? " nor an org.reactivestreams.Publisher" : " (nor, with reactive-streams.jar on the classpath, an "
                + "org.reactivestreams.Publisher)"));
    }

    @SuppressWarnings("unchecked")
    public static Flow.Subscriber<Object> toFlowSubscriber(Object s) {
        if (s == null) throw new NullPointerException("subscriber is null (rule 1.9)");
        if (s instanceof Flow.Subscriber) return (Flow.Subscriber<Object>) s;
        if (RS && RsAdapters.isSubscriber(s)) return RsAdapters.toFlowSubscriber(s);
        throw new IllegalArgumentException(s.getClass().getName() + " is neither a java.util.concurrent.Flow.Subscriber"
                + (RS ? " nor an org.reactivestreams.Subscriber" : " (nor, with reactive-streams.jar on the classpath, an "
                + "org.reactivestreams.Subscriber)"));
    }

    /** A Flow.Publisher as an org.reactivestreams.Publisher (needs the API on the classpath). */
    public static Object toReactiveStreamsPublisher(Flow.Publisher<?> p) {
        if (!RS) throw new IllegalStateException("org.reactivestreams is not on the classpath");
        return RsAdapters.toRsPublisher(p);
    }
}
