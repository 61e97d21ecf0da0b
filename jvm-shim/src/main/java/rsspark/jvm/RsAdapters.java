package rsspark.jvm;

import java.util.concurrent.Flow;

import org.reactivestreams.FlowAdapters;

/** The only class that names org.reactivestreams; loaded only when {@link Interop} found the API. */
final class RsAdapters {
    private RsAdapters() {}

    static boolean isPublisher(Object p) {
        return p instanceof org.reactivestreams.Publisher;
    }

    static boolean isSubscriber(Object s) {
        return s instanceof org.reactivestreams.Subscriber;
    }

    @SuppressWarnings("unchecked")
    static Flow.Publisher<Object> toFlowPublisher(Object p) {
        return FlowAdapters.toFlowPublisher((org.reactivestreams.Publisher<Object>) p);
    }

    @SuppressWarnings("unchecked")
    static Flow.Subscriber<Object> toFlowSubscriber(Object s) {
        return FlowAdapters.toFlowSubscriber((org.reactivestreams.Subscriber<Object>) s);
    }

    @SuppressWarnings("unchecked")
    static Object toRsPublisher(Flow.Publisher<?> p) {
        return FlowAdapters.toPublisher((Flow.Publisher<Object>) p);
    }
}
