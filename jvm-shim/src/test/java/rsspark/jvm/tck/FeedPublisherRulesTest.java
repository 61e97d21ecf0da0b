package rsspark.jvm.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import rsspark.jvm.FeedPublisher;

/** FeedPublisher (Python -> JVM) against every publisher rule, fed the way the Python pump feeds it. */
class FeedPublisherRulesTest extends PublisherRules {
    private final List<FeedPublisher> created = new ArrayList<>();

    @Override
    public Flow.Publisher<Object> createPublisher(long elements) {
        FeedPublisher f = Subjects.fed(elements);
        created.add(f);
        return f;
    }

    @Override
    public Flow.Publisher<Object> createFailedPublisher() {
        FeedPublisher f = Subjects.fed(0);
        f.error("python.ValueError: the publisher failed");
        created.add(f);
        return f;
    }

    @AfterEach
    void closeAll() {
        created.forEach(FeedPublisher::close);
    }

    /**
     * Rule 1.3, the regression the JVM-side check found: a Subscriber that requests inside
     * onSubscribe wakes the feeder, whose offer() drained onNext on its own thread while
     * onSubscribe was still running. onSubscribe here stays a little longer after its request, the
     * window in which the old code signalled; no signal may start before it returns.
     */
    @Test
    void stochastic_spec103_noSignalBeforeOnSubscribeReturnsWhenItRequests() throws Exception {
        for (int run = 0; run < 200; run++) {
            FeedPublisher f = (FeedPublisher) createPublisher(3);
            CountDownLatch done = new CountDownLatch(1);
            List<String> broken = new ArrayList<>();
            f.subscribe(new Flow.Subscriber<Object>() {
                private volatile boolean returned;

                @Override
                public void onSubscribe(Flow.Subscription s) {
                    s.request(10);
                    long until = System.nanoTime() + 2_000_000; // hold onSubscribe open for 2 ms
                    while (System.nanoTime() < until) Thread.onSpinWait();
                    returned = true;
                }

                @Override
                public void onNext(Object item) {
                    if (!returned) synchronized (broken) { broken.add("onNext(" + item + ") before onSubscribe returned"); }
                }

                @Override
                public void onError(Throwable t) {
                    done.countDown();
                }

                @Override
                public void onComplete() {
                    if (!returned) synchronized (broken) { broken.add("onComplete before onSubscribe returned"); }
                    done.countDown();
                }
            });
            assertTrue(done.await(5, TimeUnit.SECONDS), "run " + run + ": the stream did not end");
            synchronized (broken) {
                assertEquals(List.of(), broken, "rule 1.3 broken in run " + run);
            }
        }
    }
}
