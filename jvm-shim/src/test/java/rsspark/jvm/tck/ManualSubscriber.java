package rsspark.jvm.tck;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The kit's Subscriber for publisher rules: requests only when the test says so, records every
 * signal, and flops (soft) what a publisher must never do: signals before or overlapping
 * {@code onSubscribe} or each other (rules 1.3, 1.9), more elements than requested (1.1), any
 * signal after a terminal one (1.7).
 */
public class ManualSubscriber implements Flow.Subscriber<Object> {
    private static final Object END = new Object();

    protected final TckEnv env;
    private final LinkedBlockingQueue<Object> signals = new LinkedBlockingQueue<>();
    private final CountDownLatch subscribedLatch = new CountDownLatch(1);
    private final AtomicReference<Thread> signalling = new AtomicReference<>();
    private volatile Flow.Subscription subscription;
    private volatile boolean onSubscribeReturned;
    private volatile boolean terminated;
    private long requested; // guarded by this
    private long received; // guarded by this
    private int depth; // nesting on the signalling thread (a synchronous request -> onNext is allowed)

    public ManualSubscriber(TckEnv env) {
        this.env = env;
    }

    // -- signals ------------------------------------------------------------------------

    @Override
    public void onSubscribe(Flow.Subscription s) {
        enter("onSubscribe");
        try {
            if (subscription != null) env.flop("rule 1.9/2.5: onSubscribe called twice");
            subscription = s;
            subscribedLatch.countDown();
            whenSubscribed(s);
        } finally {
            onSubscribeReturned = true;
            exit();
        }
    }

    /** Called inside onSubscribe; the default requests nothing. */
    protected void whenSubscribed(Flow.Subscription s) {}

    @Override
    public void onNext(Object item) {
        enter("onNext");
        try {
            checkStarted("onNext");
            if (terminated) env.flop("rule 1.7: onNext(" + item + ") after a terminal signal");
            synchronized (this) {
                received++;
                if (received > requested) {
                    env.flop("rule 1.1: element #" + received + " (" + item + ") arrived but only " + requested
                            + " were requested");
                }
            }
            signals.add(item);
            whenNext(item);
        } finally {
            exit();
        }
    }

    /** Called inside onNext after the element is recorded; the default does nothing. */
    protected void whenNext(Object item) {}

    @Override
    public void onError(Throwable t) {
        enter("onError");
        try {
            checkStarted("onError");
            if (terminated) env.flop("rule 1.7: onError(" + t + ") after a terminal signal");
            terminated = true;
            signals.add(new Failure(t));
        } finally {
            exit();
        }
    }

    @Override
    public void onComplete() {
        enter("onComplete");
        try {
            checkStarted("onComplete");
            if (terminated) env.flop("rule 1.7: onComplete after a terminal signal");
            terminated = true;
            signals.add(END);
        } finally {
            exit();
        }
    }

    private void checkStarted(String signal) {
        if (subscription == null) env.flop("rule 1.9: " + signal + " before onSubscribe");
    }

    private void enter(String signal) {
        Thread me = Thread.currentThread();
        if (signalling.get() == me) {
            depth++;
            return;
        }
        if (!signalling.compareAndSet(null, me)) {
            env.flop("rule 1.3: " + signal + " on thread " + me.getName() + " while " + signalling.get().getName()
                    + " is inside another signal" + (onSubscribeReturned ? "" : " (onSubscribe had not returned)"));
            return;
        }
        depth = 1;
    }

    private void exit() {
        if (signalling.get() != Thread.currentThread()) return;
        if (--depth == 0) signalling.set(null);
    }

    static final class Failure {
        final Throwable error;

        Failure(Throwable error) {
            this.error = error;
        }
    }

    // -- the test's side ----------------------------------------------------------------

    public Flow.Subscription subscription() {
        return subscription;
    }

    public void awaitSubscription() throws InterruptedException {
        if (!subscribedLatch.await(env.timeoutMs, TimeUnit.MILLISECONDS)) {
            env.flop("rule 1.9: no onSubscribe within " + env.timeoutMs + " ms of subscribe()");
        }
    }

    public void request(long n) {
        synchronized (this) {
            if (n > 0) requested = requested + n < 0 ? Long.MAX_VALUE : requested + n;
        }
        subscription.request(n);
    }

    public void cancel() {
        subscription.cancel();
    }

    /** The next element within the timeout; fails on completion, error or silence. */
    public Object nextElement(String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (o == null) throw new AssertionError(rule + ": no element within " + env.timeoutMs + " ms");
        if (o == END) throw new AssertionError(rule + ": completed where an element was expected");
        if (o instanceof Failure) throw new AssertionError(rule + ": onError where an element was expected", ((Failure) o).error);
        return o;
    }

    public List<Object> nextElements(int n, String rule) throws InterruptedException {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(nextElement(rule + " (element " + (i + 1) + " of " + n + ")"));
        return out;
    }

    /** An element, or null at completion; fails on error or silence. */
    public Object nextElementOrEnd(String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (o == null) throw new AssertionError(rule + ": neither an element nor onComplete within " + env.timeoutMs + " ms");
        if (o instanceof Failure) throw new AssertionError(rule + ": unexpected onError", ((Failure) o).error);
        return o == END ? null : o;
    }

    public void expectCompletion(String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (o == null) throw new AssertionError(rule + ": no onComplete within " + env.timeoutMs + " ms");
        if (o != END) throw new AssertionError(rule + ": expected onComplete, got " + describe(o));
    }

    public <E extends Throwable> E expectError(Class<E> type, String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (!(o instanceof Failure)) {
            throw new AssertionError(rule + ": expected onError(" + type.getSimpleName() + "), got " + describe(o));
        }
        Throwable t = ((Failure) o).error;
        if (!type.isInstance(t)) throw new AssertionError(rule + ": expected onError(" + type.getSimpleName() + "), got " + t, t);
        return type.cast(t);
    }

    /** Nothing may arrive within the no-signals window (the rule is about what does NOT happen). */
    public void expectNone(String rule) throws InterruptedException {
        Object o = signals.poll(env.noSignalsMs, TimeUnit.MILLISECONDS);
        if (o != null) throw new AssertionError(rule + ": expected no signal, got " + describe(o));
    }

    /** Elements that arrived, without waiting. */
    public List<Object> drained() {
        List<Object> out = new ArrayList<>();
        signals.drainTo(out);
        return out;
    }

    private static String describe(Object o) {
        if (o == null) return "nothing within the timeout";
        if (o == END) return "onComplete";
        if (o instanceof Failure) return "onError(" + ((Failure) o).error + ")";
        return "onNext(" + o + ")";
    }
}
