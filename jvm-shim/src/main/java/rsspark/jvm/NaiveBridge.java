package rsspark.jvm;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * The naive bridge the benchmark compares against: same demand-driven prefetch, but Python
 * takes one element per {@link #next} call (one py4j round trip per element).
 */
public final class NaiveBridge implements Flow.Subscriber<Object> {
    private static final Object DONE = new Object();
    private final ArrayBlockingQueue<Object> queue;
    private final int prefetch;
    private final int limit;
    private volatile Flow.Subscription upstream;
    private int consumed;
    private volatile Throwable error;

    NaiveBridge(Flow.Publisher<Object> source, int prefetch) {
        this.prefetch = prefetch;
        this.limit = Math.max(1, prefetch - (prefetch >> 2));
        this.queue = new ArrayBlockingQueue<>(prefetch + 1);
        source.subscribe(this);
    }

    /** The next element, or null at the end (see {@link #errorText}). */
    public Object next() throws InterruptedException {
        Object o = queue.poll(60, TimeUnit.SECONDS);
        if (o == null) throw new IllegalStateException("no element within 60 s");
        if (o == DONE) {
            queue.offer(DONE);
            return null;
        }
        if (++consumed == limit) {
            consumed = 0;
            upstream.request(limit);
        }
        return o;
    }

    public String errorText() {
        Throwable t = error;
        return t == null ? null : t.toString();
    }

    public void cancel() {
        Flow.Subscription s = upstream;
        if (s != null) s.cancel();
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        if (s == null) throw new NullPointerException("onSubscribe(null) (rule 2.13)");
        if (upstream != null) {
            s.cancel(); // rule 2.5
            return;
        }
        upstream = s;
        s.request(prefetch);
    }

    @Override
    public void onNext(Object item) {
        if (item == null) throw new NullPointerException("onNext(null) (rule 2.13)");
        queue.offer(item);
    }

    @Override
    public void onError(Throwable t) {
        if (t == null) throw new NullPointerException("onError(null) (rule 2.13)");
        error = t;
        queue.offer(DONE);
    }

    @Override
    public void onComplete() {
        queue.offer(DONE);
    }
}
