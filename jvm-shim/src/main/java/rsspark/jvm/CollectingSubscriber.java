package rsspark.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * A JVM Subscriber that collects what it receives, requesting {@code batch} at a time (again
 * when half is consumed); checks that it never gets more than it requested (rule 1.1) and
 * records spec violations. For demos and tests.
 */
public final class CollectingSubscriber implements Flow.Subscriber<Object> {
    private final int batch;
    private final long cancelAfter;
    private final List<Object> items = new ArrayList<>();
    private final CountDownLatch done = new CountDownLatch(1);
    private Flow.Subscription subscription;
    private long requested;
    private long received;
    private volatile boolean complete;
    private volatile Throwable error;
    private volatile String violation;
    private volatile int subscriptions;

    public CollectingSubscriber(int batch) {
        this(batch, Long.MAX_VALUE);
    }

    /** Cancels after {@code cancelAfter} elements. */
    public CollectingSubscriber(int batch, long cancelAfter) {
        if (batch <= 0) throw new IllegalArgumentException("batch must be > 0");
        this.batch = batch;
        this.cancelAfter = cancelAfter;
    }

    @Override
    public synchronized void onSubscribe(Flow.Subscription s) {
        if (s == null) throw new NullPointerException("onSubscribe(null) (rule 2.13)");
        subscriptions++;
        if (subscription != null) {
            s.cancel(); // rule 2.5
            return;
        }
        subscription = s;
        requested = batch;
        s.request(batch);
    }

    @Override
    public synchronized void onNext(Object item) {
        if (item == null) throw new NullPointerException("onNext(null) (rule 2.13)");
        if (complete || error != null) violation = "onNext after a terminal signal (rule 1.7)";
        received++;
        if (received > requested) violation = "received " + received + " elements, requested " + requested + " (rule 1.1)";
        items.add(item);
        if (received == cancelAfter) {
            subscription.cancel();
            done.countDown();
            return;
        }
        if (requested - received <= batch / 2) {
            requested += batch;
            subscription.request(batch);
        }
    }

    @Override
    public void onError(Throwable t) {
        if (t == null) throw new NullPointerException("onError(null) (rule 2.13)");
        error = t;
        done.countDown();
    }

    @Override
    public void onComplete() {
        complete = true;
        done.countDown();
    }

    /** Stops collecting: cancels the subscription (rules 3.5, 3.7: idempotent) and ends {@link #await}. */
    public synchronized void cancel() {
        if (subscription != null) subscription.cancel();
        done.countDown();
    }

    /** Waits for the end (or the cancel after {@code cancelAfter}); true if it came in time. */
    public boolean await(long timeoutMs) throws InterruptedException {
        return done.await(timeoutMs, TimeUnit.MILLISECONDS);
    }

    public synchronized List<Object> items() {
        return new ArrayList<>(items);
    }

    public synchronized long count() {
        return received;
    }

    public synchronized long requested() {
        return requested;
    }

    public boolean isComplete() {
        return complete;
    }

    public String errorText() {
        Throwable t = error;
        return t == null ? null : t.getClass().getName() + ": " + t.getMessage();
    }

    public String violation() {
        return violation;
    }

    public int subscriptions() {
        return subscriptions;
    }
}
