package rsspark.jvm.tck;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.function.Function;

import org.apache.arrow.memory.RootAllocator;

import rsspark.jvm.BatchEncoder;
import rsspark.jvm.Demand;
import rsspark.jvm.FeedPublisher;
import rsspark.jvm.Schemas;
import rsspark.jvm.Shim;

/** The shim's Flow classes set up the way the Python side uses them, for the rule suites. */
final class Subjects {
    private Subjects() {}

    /** IPC of one int64 column "value" holding {@code from .. to-1}. */
    static byte[] longs(long from, long to) {
        List<Object> items = new ArrayList<>();
        for (long i = from; i < to; i++) items.add(i);
        try (BatchEncoder e = new BatchEncoder(Schemas.parse("value:int64"), new RootAllocator())) {
            return e.encode(items, 0, items.size(), 0);
        }
    }

    /**
     * A FeedPublisher of {@code n} elements fed as the Python pump feeds it: a thread waits for
     * demand ({@code awaitDemand}) and offers IPC batches covering it, then completes.
     */
    static FeedPublisher fed(long n) {
        FeedPublisher f = Shim.feed("value");
        Thread feeder = new Thread(() -> feed(f, n), "rs-tck-feeder");
        feeder.setDaemon(true);
        feeder.start();
        return f;
    }

    private static void feed(FeedPublisher f, long n) {
        long next = 0, demand = 0;
        try {
            while (next < n) {
                if (demand == 0) {
                    long d = f.awaitDemand(20);
                    if (d < 0) return; // cancelled
                    demand = Demand.addCap(demand, d);
                    continue;
                }
                long k = Math.min(Math.min(demand, n - next), 1024);
                long d = f.offer(longs(next, next + k));
                next += k;
                if (demand != Long.MAX_VALUE) demand -= k;
                if (d < 0) return;
                demand = Demand.addCap(demand, d);
            }
            f.complete();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A subscriber under test that reports to a whitebox probe, driven by {@code puppet}. */
    static Flow.Subscriber<Object> probed(Flow.Subscriber<Object> inner, WhiteboxProbe probe,
                                          Function<Flow.Subscriber<Object>, WhiteboxProbe.Puppet> puppet) {
        return new Flow.Subscriber<Object>() {
            private boolean registered;

            @Override
            public void onSubscribe(Flow.Subscription s) {
                inner.onSubscribe(s);
                if (!registered) {
                    registered = true;
                    probe.registerOnSubscribe(puppet.apply(inner));
                }
            }

            @Override
            public void onNext(Object item) {
                inner.onNext(item);
                probe.registerOnNext(item);
            }

            @Override
            public void onError(Throwable t) {
                inner.onError(t);
                probe.registerOnError(t);
            }

            @Override
            public void onComplete() {
                inner.onComplete();
                probe.registerOnComplete();
            }
        };
    }
}
