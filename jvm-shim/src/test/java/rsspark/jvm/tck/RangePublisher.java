package rsspark.jvm.tck;

import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import rsspark.jvm.Demand;

/**
 * A small correct publisher of {@code 0 .. n-1} (serial drain, demand, cancel, rules 3.9 / 3.17)
 * for the kit's self-check: {@link Fault} turns on one deliberate spec violation.
 */
class RangePublisher implements Flow.Publisher<Object> {
    enum Fault { NONE, OVERSHOOT, SIGNAL_AFTER_COMPLETE, CONCURRENT_SIGNALS }

    private final long n;
    private final Fault fault;

    RangePublisher(long n, Fault fault) {
        this.n = n;
        this.fault = fault;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super Object> s) {
        if (s == null) throw new NullPointerException("subscribe(null) (rule 1.9)");
        Flow.Subscriber<Object> sub = s; // `? super Object` is Object
        Sub subscription = new Sub(sub);
        sub.onSubscribe(subscription);
        subscription.drain();
    }

    private final class Sub implements Flow.Subscription {
        private volatile Flow.Subscriber<Object> sub;
        private final AtomicLong requested = new AtomicLong();
        private final AtomicInteger wip = new AtomicInteger();
        private volatile boolean cancelled;
        private volatile long bad;
        private volatile boolean badRequested;
        private long next; // drain owner only
        private long emitted;

        Sub(Flow.Subscriber<Object> sub) {
            this.sub = sub;
        }

        @Override
        public void request(long k) {
            if (k <= 0) {
                bad = k;
                badRequested = true;
            }
            else requested.getAndAccumulate(k, Demand::addCap);
            if (fault == Fault.CONCURRENT_SIGNALS) {
                concurrentEmit();
            } else {
                drain();
            }
        }

        @Override
        public void cancel() {
            cancelled = true;
            sub = null; // rule 3.13
        }

        void drain() {
            if (wip.getAndIncrement() != 0) return;
            int missed = 1;
            do {
                emit();
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }

        private void emit() {
            Flow.Subscriber<Object> s = sub;
            if (s == null || cancelled) return;
            if (badRequested) {
                cancel();
                s.onError(Demand.invalid(bad));
                return;
            }
            long allowed = requested.get() + (fault == Fault.OVERSHOOT ? 1 : 0);
            while (next < n && (emitted < allowed || requested.get() == Long.MAX_VALUE) && !cancelled) {
                emitted++;
                s.onNext(next++);
            }
            if (next == n && !cancelled) {
                cancel();
                s.onComplete();
                if (fault == Fault.SIGNAL_AFTER_COMPLETE) {
                    s.onNext(-1L); // rule 1.7 broken
                    s.onComplete();
                }
            }
        }

        /** Rule 1.3 broken: each request emits from a thread of its own, waiting until that one is done. */
        private void concurrentEmit() {
            Thread t = new Thread(this::emitConcurrently, "rs-tck-broken-emitter");
            t.start();
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private synchronized long take() {
            if (next < n && emitted < requested.get()) {
                emitted++;
                return next++;
            }
            return -1;
        }

        private void emitConcurrently() {
            Flow.Subscriber<Object> s = sub;
            if (s == null || cancelled) return;
            if (badRequested) {
                cancel();
                s.onError(Demand.invalid(bad));
                return;
            }
            for (long i = take(); i >= 0 && !cancelled; i = take()) s.onNext(i);
            boolean end;
            synchronized (this) {
                end = next == n && !cancelled;
                if (end) cancelled = true;
            }
            if (end) {
                sub = null;
                s.onComplete();
            }
        }
    }
}
