package rsspark.jvm.tck;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The publisher side that drives a Subscriber under test, as the JVM TCK's stage: its
 * Subscription records requests and cancel; the test signals onNext / onComplete / onError
 * synchronously on its own thread. Calls on the Subscription from inside onComplete or onError
 * on the signalling thread are flopped (rule 2.3).
 */
public final class Stage implements Flow.Subscription {
    private final TckEnv env;
    private final LinkedBlockingQueue<Long> requests = new LinkedBlockingQueue<>();
    private final CountDownLatch cancelled = new CountDownLatch(1);
    private final ThreadLocal<String> inTerminal = new ThreadLocal<>();
    private long outstanding; // requested minus sent, guarded by this

    public Stage(TckEnv env) {
        this.env = env;
    }

    @Override
    public void request(long n) {
        String terminal = inTerminal.get();
        if (terminal != null) env.flop("rule 2.3: request(" + n + ") called from inside " + terminal);
        if (n <= 0) env.flop("rule 2.1/3.9: request(" + n + ")");
        synchronized (this) {
            outstanding = outstanding + n < 0 ? Long.MAX_VALUE : outstanding + n;
        }
        requests.add(n);
    }

    @Override
    public void cancel() {
        String terminal = inTerminal.get();
        if (terminal != null) env.flop("rule 2.3: cancel() called from inside " + terminal);
        cancelled.countDown();
    }

    /** The next request(n) within the timeout (hard), returning n. */
    public long expectRequest(String rule) throws InterruptedException {
        Long n = requests.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (n == null) throw new AssertionError(rule + ": the subscriber did not request within " + env.timeoutMs + " ms");
        if (n <= 0) throw new AssertionError(rule + ": request(" + n + ")");
        return n;
    }

    public void expectNoRequest(String rule) throws InterruptedException {
        Long n = requests.poll(env.noSignalsMs, TimeUnit.MILLISECONDS);
        if (n != null) throw new AssertionError(rule + ": unexpected request(" + n + ")");
    }

    public boolean awaitCancel() throws InterruptedException {
        return cancelled.await(env.timeoutMs, TimeUnit.MILLISECONDS);
    }

    public boolean isCancelled() {
        return cancelled.getCount() == 0;
    }

    public synchronized long outstanding() {
        return outstanding;
    }

    public void sendNext(Flow.Subscriber<Object> s, Object element) {
        synchronized (this) {
            if (outstanding > 0 && outstanding != Long.MAX_VALUE) outstanding--;
        }
        s.onNext(element);
    }

    public void sendComplete(Flow.Subscriber<Object> s) {
        inTerminal.set("onComplete");
        try {
            s.onComplete();
        } finally {
            inTerminal.remove();
        }
    }

    public void sendError(Flow.Subscriber<Object> s, Throwable t) {
        inTerminal.set("onError");
        try {
            s.onError(t);
        } finally {
            inTerminal.remove();
        }
    }

    /** A Subscription that ignores everything (for a subscriber's second onSubscribe and null tests). */
    public static Flow.Subscription noop() {
        return new Flow.Subscription() {
            public void request(long n) {}

            public void cancel() {}
        };
    }

    /** The error the stage signals. */
    public static final class TestException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public TestException() {
            super("a failure signalled by the test stage");
        }
    }
}
