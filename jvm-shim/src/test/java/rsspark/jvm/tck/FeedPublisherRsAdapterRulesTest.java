package rsspark.jvm.tck;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;

import org.junit.jupiter.api.AfterEach;
import org.reactivestreams.FlowAdapters;

import rsspark.jvm.FeedPublisher;
import rsspark.jvm.Interop;

/**
 * The org.reactivestreams Publisher the shim hands to user code for a feed
 * ({@link Interop#toReactiveStreamsPublisher}), seen through the standard adapter, against every
 * publisher rule.
 */
class FeedPublisherRsAdapterRulesTest extends PublisherRules {
    private final List<FeedPublisher> created = new ArrayList<>();

    @SuppressWarnings("unchecked")
    private Flow.Publisher<Object> adapted(FeedPublisher f) {
        created.add(f);
        return FlowAdapters.toFlowPublisher((org.reactivestreams.Publisher<Object>) Interop.toReactiveStreamsPublisher(f));
    }

    @Override
    public Flow.Publisher<Object> createPublisher(long elements) {
        return adapted(Subjects.fed(elements));
    }

    @Override
    public Flow.Publisher<Object> createFailedPublisher() {
        FeedPublisher f = Subjects.fed(0);
        f.error("python.ValueError: the publisher failed");
        return adapted(f);
    }

    @AfterEach
    void closeAll() {
        created.forEach(FeedPublisher::close);
    }
}
