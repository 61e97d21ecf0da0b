package rsspark.jvm;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** The JVM-facing Publisher of Python -> JVM (spec sections 1 and 3). */
class FeedPublisherTest {
    /** Records signals and checks their order; requests as told. */
    static final class Probe implements Flow.Subscriber<Object> {
        final List<Object> items = Collections.synchronizedList(new ArrayList<>());
        final List<String> signals = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch done = new CountDownLatch(1);
        volatile Flow.Subscription s;
        volatile Throwable error;
        final long initial;

        Probe(long initial) {
            this.initial = initial;
        }

        public void onSubscribe(Flow.Subscription s) {
            signals.add("subscribe");
            this.s = s;
            if (initial > 0) s.request(initial);
        }

        public void onNext(Object o) {
            signals.add("next");
            items.add(o);
        }

        public void onError(Throwable t) {
            signals.add("error");
            error = t;
            done.countDown();
        }

        public void onComplete() {
            signals.add("complete");
            done.countDown();
        }
    }

    private static byte[] longs(long from, long to) {
        List<Object> l = new ArrayList<>();
        for (long i = from; i < to; i++) l.add(i);
        return Util.encode("value:int64", l);
    }

    @Test
    void spec_1_1_neverMoreThanRequestedAndTheRestWaitsForDemand() throws Exception {
        FeedPublisher f = Shim.feed("value");
        Probe p = new Probe(3);
        f.subscribe(p);
        assertEquals(3, f.awaitDemand(10));
        assertEquals(3, f.offer(longs(0, 5)) + 3); // no new demand: 0
        assertEquals(List.of(0L, 1L, 2L), p.items);
        assertEquals(2, f.queued());
        p.s.request(10);
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L), p.items);
        assertEquals(10, f.awaitDemand(10));
        f.complete();
        assertTrue(p.done.await(1, TimeUnit.SECONDS));
        assertEquals("complete", p.signals.get(p.signals.size() - 1));
        f.close();
    }

    @Test
    void spec_1_9_subscribeNullThrowsAndOnSubscribeComesFirst() {
        FeedPublisher f = Shim.feed("value");
        assertThrows(NullPointerException.class, () -> f.subscribe(null));
        Probe p = new Probe(0);
        f.subscribe(p);
        assertEquals("subscribe", p.signals.get(0));
        f.close();
    }

    @Test
    void unicast_aSecondSubscriberGetsOnSubscribeThenOnError() {
        FeedPublisher f = Shim.feed("value");
        f.subscribe(new Probe(0));
        Probe second = new Probe(0);
        f.subscribe(second);
        assertEquals(List.of("subscribe", "error"), second.signals);
        assertTrue(second.error.getMessage().contains("unicast"));
        f.close();
    }

    @Test
    void spec_3_9_requestZeroOrNegativeSignalsIllegalArgumentException() {
        for (long n : new long[] {0, -1, Long.MIN_VALUE}) {
            FeedPublisher f = Shim.feed("value");
            Probe p = new Probe(0);
            f.subscribe(p);
            p.s.request(n);
            assertEquals(List.of("subscribe", "error"), p.signals);
            assertInstanceOf(IllegalArgumentException.class, p.error);
            assertTrue(p.error.getMessage().contains("3.9"), p.error.getMessage());
            assertEquals(-1, f.offer(longs(0, 1)), "the Python side learns the stream is over");
            f.close();
        }
    }

    @Test
    void spec_3_17_demandSaturatesAtLongMaxValue() throws Exception {
        FeedPublisher f = Shim.feed("value");
        Probe p = new Probe(Long.MAX_VALUE);
        f.subscribe(p);
        p.s.request(Long.MAX_VALUE);
        p.s.request(1);
        assertEquals(Long.MAX_VALUE, f.awaitDemand(10));
        f.offer(longs(0, 1000));
        assertEquals(1000, p.items.size());
        f.complete();
        assertTrue(p.done.await(1, TimeUnit.SECONDS));
        f.close();
    }

    @Test
    void spec_3_3_requestFromOnNextDoesNotRecurse() {
        FeedPublisher f = Shim.feed("value");
        int[] depth = {0, 0};
        f.subscribe(new Flow.Subscriber<Object>() {
            Flow.Subscription s;
            public void onSubscribe(Flow.Subscription s) { this.s = s; s.request(1); }
            public void onNext(Object o) {
                depth[0]++;
                depth[1] = Math.max(depth[1], depth[0]);
                s.request(1);
                depth[0]--;
            }
            public void onError(Throwable t) {}
            public void onComplete() {}
        });
        f.offer(longs(0, 10_000));
        assertEquals(1, depth[1]);
        f.close();
    }

    @Test
    void spec_3_6_and_3_13_afterCancelNoSignalsAndDemandReportsCancel() throws Exception {
        FeedPublisher f = Shim.feed("value");
        Probe p = new Probe(2);
        f.subscribe(p);
        p.s.cancel();
        p.s.cancel(); // rule 3.5: idempotent
        p.s.request(5); // rule 3.6: no-op
        assertEquals(-1, f.offer(longs(0, 3)));
        assertEquals(-1, f.awaitDemand(10));
        f.complete();
        assertEquals(List.of("subscribe"), p.signals);
        f.close();
    }

    @Test
    void pythonErrorsArriveAfterQueuedElementsAsPythonException() throws Exception {
        FeedPublisher f = Shim.feed("value");
        Probe p = new Probe(10);
        f.subscribe(p);
        f.offer(longs(0, 2));
        f.error("builtins.ValueError: bad");
        assertTrue(p.done.await(1, TimeUnit.SECONDS));
        assertEquals(List.of("subscribe", "next", "next", "error"), p.signals);
        assertEquals("builtins.ValueError: bad", p.error.getMessage());
        f.close();
    }

    @Test
    void spec_2_13_aThrowingOnNextCancelsTheSubscription() {
        FeedPublisher f = Shim.feed("value");
        List<Object> seen = new ArrayList<>();
        f.subscribe(new Flow.Subscriber<Object>() {
            public void onSubscribe(Flow.Subscription s) { s.request(10); }
            public void onNext(Object o) { seen.add(o); throw new IllegalStateException("subscriber bug"); }
            public void onError(Throwable t) { seen.add("error"); }
            public void onComplete() { seen.add("complete"); }
        });
        assertEquals(-1, f.offer(longs(0, 3)));
        assertEquals(List.of(0L), seen);
        assertTrue(f.isCancelled());
        f.close();
    }

    @Test
    void spec_2_13_aFatalErrorFromOnNextIsRethrownNotSwallowed() {
        FeedPublisher f = Shim.feed("value");
        f.subscribe(new Flow.Subscriber<Object>() {
            public void onSubscribe(Flow.Subscription s) { s.request(10); }
            public void onNext(Object o) { throw new StackOverflowError("subscriber recursed"); }
            public void onError(Throwable t) {}
            public void onComplete() {}
        });
        StackOverflowError e = assertThrows(StackOverflowError.class, () -> f.offer(longs(0, 3)));
        assertEquals("subscriber recursed", e.getMessage());
        f.close();
    }

    @Test
    void spec_2_13_aFatalErrorFromOnSubscribeIsRethrownNotSwallowed() {
        FeedPublisher f = Shim.feed("value");
        Flow.Subscriber<Object> s = new Flow.Subscriber<>() {
            public void onSubscribe(Flow.Subscription s) { throw new OutOfMemoryError("no heap left"); }
            public void onNext(Object o) {}
            public void onError(Throwable t) {}
            public void onComplete() {}
        };
        assertThrows(OutOfMemoryError.class, () -> f.subscribe(s));
        f.close();
    }

    @Test
    void reactiveStreamsSubscribersAreBridgedWithFlowAdapters() throws Exception {
        assertTrue(Interop.reactiveStreamsAvailable());
        List<Object> seen = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(1);
        org.reactivestreams.Subscriber<Object> rs = new org.reactivestreams.Subscriber<>() {
            public void onSubscribe(org.reactivestreams.Subscription s) { s.request(Long.MAX_VALUE); }
            public void onNext(Object o) { seen.add(o); }
            public void onError(Throwable t) {}
            public void onComplete() { done.countDown(); }
        };
        FeedPublisher f = Shim.feedInto(rs, "value");
        f.offer(longs(0, 3));
        f.complete();
        assertTrue(done.await(1, TimeUnit.SECONDS));
        assertEquals(List.of(0L, 1L, 2L), seen);
        f.close();
        // and org.reactivestreams Publishers feed the pull bridge
        Object rsPub = Interop.toReactiveStreamsPublisher(Sources.submissionLongs(3));
        try (PublisherBridge b = Shim.pull(rsPub, null)) {
            b.start();
            b.request(3);
            List<Object> got = new ArrayList<>();
            while (true) {
                byte[] d = b.poll(10, 2000, 2);
                if (d.length == 0) break;
                got.addAll(Util.column(d));
            }
            assertEquals(List.of(0L, 1L, 2L), got);
        }
    }
}
