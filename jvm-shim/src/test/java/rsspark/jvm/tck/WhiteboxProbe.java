package rsspark.jvm.tck;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** What a whitebox Subscriber under test reports to, as the JVM TCK's WhiteboxSubscriberProbe. */
public final class WhiteboxProbe {
    /** How the kit drives the subscriber: "eventually have requested at least n in total", and cancel. */
    public interface Puppet {
        void triggerRequest(long n);

        void signalCancel();
    }

    private record Next(Object element) {}

    private record Error(Throwable error) {}

    private static final Object COMPLETE = new Object();
    private final TckEnv env;
    private final CompletableFuture<Puppet> puppet = new CompletableFuture<>();
    private final LinkedBlockingQueue<Object> signals = new LinkedBlockingQueue<>();

    WhiteboxProbe(TckEnv env) {
        this.env = env;
    }

    public void registerOnSubscribe(Puppet p) {
        if (!puppet.complete(p)) env.flop("rule 2.5: registerOnSubscribe called twice");
    }

    public void registerOnNext(Object element) {
        signals.add(new Next(element));
    }

    public void registerOnError(Throwable t) {
        signals.add(new Error(t)); // a null error is recorded too: the queue takes no null
    }

    public void registerOnComplete() {
        signals.add(COMPLETE);
    }

    Puppet puppet() throws Exception {
        try {
            return puppet.get(env.timeoutMs, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("the subscriber did not call probe.registerOnSubscribe within " + env.timeoutMs + " ms");
        }
    }

    void expectNext(Object expected, String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (!(o instanceof Next)) throw new AssertionError(rule + ": expected onNext(" + expected + "), got " + o);
        Object got = ((Next) o).element();
        if (!expected.equals(got)) env.flop(rule + ": expected onNext(" + expected + "), got onNext(" + got + ")");
    }

    void expectComplete(String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (o != COMPLETE) env.flop(rule + ": expected onComplete, got " + o);
    }

    void expectError(Throwable expected, String rule) throws InterruptedException {
        Object o = signals.poll(env.timeoutMs, TimeUnit.MILLISECONDS);
        if (!(o instanceof Error) || ((Error) o).error() != expected) {
            env.flop(rule + ": expected onError(" + expected + ") (the same object), got " + o);
        }
    }

    void expectNone(String rule) throws InterruptedException {
        Object o = signals.poll(env.noSignalsMs, TimeUnit.MILLISECONDS);
        if (o != null) env.flop(rule + ": expected no signal, got " + o);
    }
}
