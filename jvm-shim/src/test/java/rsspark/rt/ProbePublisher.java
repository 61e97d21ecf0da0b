package rsspark.rt;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A JVM publisher the test drives by hand (jvmPublisher {@code rsspark.rt.ProbePublisher#probe},
 * option {@code publisher.id}): it records what was requested and whether it was cancelled, and
 * emits when the test says so, on the test's thread.
 */
public final class ProbePublisher implements Flow.Publisher<Object> {
    static final Map<String, ProbePublisher> BY_ID = new ConcurrentHashMap<>();

    final AtomicLong requested = new AtomicLong();
    volatile boolean cancelled;
    volatile int subscriptions;
    private volatile Flow.Subscriber<? super Object> subscriber;

    public static Flow.Publisher<Object> probe(Map<String, String> options) {
        ProbePublisher p = new ProbePublisher();
        BY_ID.put(options.get("id"), p);
        return p;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super Object> s) {
        subscriptions++;
        subscriber = s;
        s.onSubscribe(new Flow.Subscription() {
            @Override
            public void request(long n) {
                requested.addAndGet(n);
            }

            @Override
            public void cancel() {
                cancelled = true;
            }
        });
    }

    /** onNext(from), onNext(from + 1), ... n elements. */
    void emit(long from, int n) {
        for (long i = from; i < from + n; i++) subscriber.onNext(i);
    }

    void next(Object item) {
        subscriber.onNext(item);
    }

    void complete() {
        subscriber.onComplete();
    }
}
