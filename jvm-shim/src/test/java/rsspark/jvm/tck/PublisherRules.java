package rsspark.jvm.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The JVM TCK's 38 PublisherVerification tests as JUnit 5 tests, named as the TCK names them
 * (see the project's TCK inventory). Subclass, implement {@link #createPublisher}; optional tests
 * that a publisher does not implement are aborted with the reason, untested rules are aborted
 * naming the rule; required tests fail.
 */
public abstract class PublisherRules {
    /** A publisher of exactly {@code elements} elements (then onComplete). */
    public abstract Flow.Publisher<Object> createPublisher(long elements);

    /** A publisher that signals onError after onSubscribe; null: the failed-publisher tests are skipped. */
    public Flow.Publisher<Object> createFailedPublisher() {
        return null;
    }

    /** The most elements {@link #createPublisher} can produce; Long.MAX_VALUE: it never completes. */
    public long maxElementsFromPublisher() {
        return Long.MAX_VALUE - 1;
    }

    public long boundedDepthOfOnNextAndRequestRecursion() {
        return 1;
    }

    public boolean skipStochasticTests() {
        return false;
    }

    protected TckEnv env = new TckEnv(1000, 100);

    // -- harness ------------------------------------------------------------------------

    interface Body {
        void run(Flow.Publisher<Object> pub) throws Exception;
    }

    private void active(long elements, boolean completion, Body body) throws Exception {
        Assumptions.assumeTrue(elements <= maxElementsFromPublisher(),
                "needs a publisher of " + elements + " elements; maxElementsFromPublisher() is " + maxElementsFromPublisher());
        Assumptions.assumeTrue(!completion || maxElementsFromPublisher() != Long.MAX_VALUE,
                "needs a publisher that completes; maxElementsFromPublisher() is Long.MAX_VALUE");
        body.run(createPublisher(elements));
        env.verifyNoAsyncErrors();
    }

    private void optional(long elements, boolean completion, Body body) throws Exception {
        try {
            active(elements, completion, body);
        } catch (AssertionError | Exception e) {
            if (e instanceof org.opentest4j.TestAbortedException) throw e;
            Assumptions.abort("the publisher does NOT implement this OPTIONAL requirement: " + e.getMessage());
        }
    }

    private Flow.Publisher<Object> failed() {
        Flow.Publisher<Object> p = createFailedPublisher();
        Assumptions.assumeTrue(p != null, "createFailedPublisher() returned null: no failed publisher to test");
        return p;
    }

    private ManualSubscriber subscribe(Flow.Publisher<Object> pub) throws InterruptedException {
        ManualSubscriber s = new ManualSubscriber(env);
        pub.subscribe(s);
        s.awaitSubscription();
        env.verifyNoAsyncErrors();
        return s;
    }

    private static void untested(String rule, String why) {
        Assumptions.abort("untested: rule " + rule + " is not verified by this kit (" + why + ")");
    }

    // -- the tests ----------------------------------------------------------------------

    @Test
    void required_createPublisher1MustProduceAStreamOfExactly1Element() throws Exception {
        active(1, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(1);
            assertNotNull(s.nextElementOrEnd("createPublisher(1)"), "createPublisher(1) completed without an element");
            s.request(1);
            s.expectCompletion("createPublisher(1) must complete after 1 element");
        });
    }

    @Test
    void required_createPublisher3MustProduceAStreamOfExactly3Elements() throws Exception {
        active(3, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            for (int i = 0; i < 3; i++) {
                s.request(1);
                assertNotNull(s.nextElementOrEnd("createPublisher(3)"), "createPublisher(3) completed after " + i);
            }
            s.request(1);
            s.expectCompletion("createPublisher(3) must complete after 3 elements");
        });
    }

    @Test
    void required_validate_maxElementsFromPublisher() {
        assertTrue(maxElementsFromPublisher() >= 0, "maxElementsFromPublisher() must be >= 0");
    }

    @Test
    void required_validate_boundedDepthOfOnNextAndRequestRecursion() {
        assertTrue(boundedDepthOfOnNextAndRequestRecursion() >= 1, "boundedDepthOfOnNextAndRequestRecursion() must be >= 1");
    }

    @Test
    void required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements() throws Exception {
        active(5, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            try {
                s.expectNone("rule 1.1: nothing before any request");
                s.request(1);
                s.nextElement("rule 1.1");
                s.expectNone("rule 1.1: nothing beyond the 1 requested");
                s.request(1);
                s.request(2);
                s.nextElements(3, "rule 1.1");
                s.expectNone("rule 1.1: nothing beyond the 4 requested");
            } finally {
                s.cancel();
            }
        });
    }

    @Test
    void required_spec102_maySignalLessThanRequestedAndTerminateSubscription() throws Exception {
        active(3, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(10);
            s.nextElements(3, "rule 1.2");
            s.expectCompletion("rule 1.2: onComplete after 3 of 10 requested");
        });
    }

    @Test
    void stochastic_spec103_mustSignalOnMethodsSequentially() throws Exception {
        Assumptions.assumeFalse(skipStochasticTests(), "stochastic tests are turned off by skipStochasticTests()");
        for (int i = 0; i < 100; i++) {
            active(10, true, pub -> {
                CountDownLatch done = new CountDownLatch(1);
                AtomicInteger received = new AtomicInteger();
                ManualSubscriber s = new ManualSubscriber(env) {
                    @Override
                    protected void whenSubscribed(Flow.Subscription sub) {
                        request(1);
                    }

                    @Override
                    protected void whenNext(Object item) {
                        if (received.incrementAndGet() <= 10) request(1); // one beyond the stream's length
                    }

                    @Override
                    public void onComplete() {
                        super.onComplete();
                        done.countDown();
                    }
                };
                pub.subscribe(s);
                assertTrue(done.await(10 * env.timeoutMs, TimeUnit.MILLISECONDS), "rule 1.3: no onComplete after 10 elements");
            });
        }
    }

    @Test
    void optional_spec104_mustSignalOnErrorWhenFails() throws Exception {
        Flow.Publisher<Object> pub = failed();
        ManualSubscriber s = new ManualSubscriber(env);
        try {
            pub.subscribe(s);
        } catch (RuntimeException e) {
            throw new AssertionError("rule 1.4: subscribe threw " + e + " instead of signalling onError", e);
        }
        s.awaitSubscription();
        s.expectError(Throwable.class, "rule 1.4");
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates() throws Exception {
        active(3, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            for (int i = 0; i < 3; i++) {
                s.request(1);
                s.nextElement("rule 1.5");
            }
            s.request(1);
            s.expectCompletion("rule 1.5: onComplete after the last element");
            s.expectNone("rule 1.7: nothing after onComplete");
        });
    }

    @Test
    void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Exception {
        optional(0, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(1);
            s.expectCompletion("rule 1.5: an empty stream completes");
            s.expectNone("rule 1.7: nothing after onComplete");
        });
    }

    @Test
    void untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled() {
        untested("1.6", "not observable from outside the publisher");
    }

    @Test
    void required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled() throws Exception {
        active(1, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(10);
            s.nextElement("rule 1.7");
            s.expectCompletion("rule 1.7");
            s.request(10);
            s.expectNone("rule 1.7: no signal after onComplete");
        });
    }

    @Test
    void untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled() {
        untested("1.7", "after onError: needs a publisher that fails on demand");
    }

    @Test
    void untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals() {
        untested("1.8", "a race the kit cannot provoke deterministically");
    }

    @Test
    void untested_spec109_subscribeShouldNotThrowNonFatalThrowable() {
        untested("1.9", "any throw is caught by the other 1.9 tests");
    }

    @Test
    void required_spec109_subscribeThrowNPEOnNullSubscriber() throws Exception {
        active(0, false, pub -> assertThrows(NullPointerException.class, () -> pub.subscribe(null),
                "rule 1.9: subscribe(null) must throw NullPointerException"));
    }

    @Test
    void required_spec109_mustIssueOnSubscribeForNonNullSubscriber() throws Exception {
        active(0, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.cancel();
        });
    }

    @Test
    void required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThemRejectionMustTriggerOnErrorAfterOnSubscribe()
            throws Exception {
        Flow.Publisher<Object> pub = failed();
        ManualSubscriber s = new ManualSubscriber(env);
        pub.subscribe(s);
        s.awaitSubscription();
        s.expectError(Throwable.class, "rule 1.9: a rejection is onError after onSubscribe");
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice() {
        untested("1.10", "the spec leaves the reaction open");
    }

    @Test
    void optional_spec111_maySupportMultiSubscribe() throws Exception {
        optional(1, false, pub -> {
            ManualSubscriber a = subscribe(pub);
            ManualSubscriber b = subscribe(pub);
            env.verifyNoAsyncErrorsAfterQuietWindow();
            a.expectNone("rule 1.11");
            b.expectNone("rule 1.11: a second subscriber is served, not refused");
            a.cancel();
            b.cancel();
        });
    }

    @Test
    void optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals() throws Exception {
        optional(1, false, pub -> {
            ManualSubscriber a = subscribe(pub);
            ManualSubscriber b = subscribe(pub);
            a.request(1);
            b.request(1);
            a.nextElementOrEnd("rule 1.11");
            b.nextElementOrEnd("rule 1.11");
            env.verifyNoAsyncErrorsAfterQuietWindow();
            a.cancel();
            b.cancel();
        });
    }

    @Test
    void optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingOneByOne()
            throws Exception {
        optional(5, true, pub -> {
            ManualSubscriber a = subscribe(pub);
            ManualSubscriber b = subscribe(pub);
            ManualSubscriber c = subscribe(pub);
            List<Object> sa = new java.util.ArrayList<>(), sb = new java.util.ArrayList<>(), sc = new java.util.ArrayList<>();
            a.request(1); sa.add(a.nextElement("1.11"));
            b.request(2); sb.addAll(b.nextElements(2, "1.11"));
            c.request(3); sc.addAll(c.nextElements(3, "1.11"));
            a.request(1); sa.add(a.nextElement("1.11"));
            b.request(3); sb.addAll(b.nextElements(3, "1.11"));
            c.request(1); sc.add(c.nextElement("1.11"));
            a.request(2); sa.addAll(a.nextElements(2, "1.11"));
            c.request(1); sc.add(c.nextElement("1.11"));
            a.request(1); sa.add(a.nextElement("1.11"));
            for (ManualSubscriber s : List.of(a, b, c)) {
                s.request(1);
                s.expectCompletion("rule 1.11");
            }
            assertEquals(sa, sb, "rule 1.11: the same elements in the same order");
            assertEquals(sa, sc, "rule 1.11: the same elements in the same order");
        });
    }

    @Test
    void optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfront()
            throws Exception {
        optional(3, false, pub -> multicastUpfront(pub, false));
    }

    @Test
    void optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfrontAndCompleteAsExpected()
            throws Exception {
        optional(3, true, pub -> multicastUpfront(pub, true));
    }

    private void multicastUpfront(Flow.Publisher<Object> pub, boolean complete) throws Exception {
        ManualSubscriber a = subscribe(pub);
        ManualSubscriber b = subscribe(pub);
        ManualSubscriber c = subscribe(pub);
        for (ManualSubscriber s : List.of(a, b, c)) s.request(4);
        List<Object> sa = a.nextElements(3, "1.11"), sb = b.nextElements(3, "1.11"), sc = c.nextElements(3, "1.11");
        if (complete) for (ManualSubscriber s : List.of(a, b, c)) s.expectCompletion("rule 1.11");
        assertEquals(sa, sb, "rule 1.11");
        assertEquals(sa, sc, "rule 1.11");
    }

    @Test
    void required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe() throws Exception {
        active(6, false, pub -> {
            ManualSubscriber s = new ManualSubscriber(env) {
                @Override
                protected void whenSubscribed(Flow.Subscription sub) {
                    request(1);
                    request(1);
                    request(1);
                }

                @Override
                protected void whenNext(Object item) {
                    request(1);
                }
            };
            pub.subscribe(s);
            s.awaitSubscription();
            s.nextElements(6, "rule 3.2: requests from onSubscribe and onNext are honoured");
            env.verifyNoAsyncErrorsAfterQuietWindow();
        });
    }

    @Test
    void required_spec303_mustNotAllowUnboundedRecursionWithinRequestAndOnNext() throws Exception {
        long bound = boundedDepthOfOnNextAndRequestRecursion();
        active(bound + 1, false, pub -> {
            ThreadLocal<long[]> depth = ThreadLocal.withInitial(() -> new long[1]);
            AtomicLong received = new AtomicLong();
            CountDownLatch done = new CountDownLatch(1);
            ManualSubscriber s = new ManualSubscriber(env) {
                @Override
                protected void whenNext(Object item) {
                    long[] d = depth.get();
                    d[0]++;
                    try {
                        if (d[0] > bound) {
                            env.flop("rule 3.3: " + d[0] + " onNext calls nested in request on " + Thread.currentThread().getName()
                                    + ", the bound is " + bound);
                            done.countDown();
                        } else if (received.incrementAndGet() >= bound + 1) {
                            done.countDown();
                        } else {
                            request(1);
                        }
                    } finally {
                        d[0]--;
                    }
                }
            };
            pub.subscribe(s);
            s.awaitSubscription();
            try {
                s.request(1);
                assertTrue(done.await(env.timeoutMs, TimeUnit.MILLISECONDS), "rule 3.3: the elements did not arrive");
            } finally {
                s.cancel();
            }
        });
    }

    @Test
    void untested_spec304_requestShouldNotPerformHeavyComputations() {
        untested("3.4", "no test can tell heavy from light");
    }

    @Test
    void untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation() {
        untested("3.5", "no test can tell heavy from light");
    }

    @Test
    void required_spec306_afterSubscriptionIsCancelledRequestMustBeNops() throws Exception {
        active(3, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.cancel();
            s.request(1);
            s.request(1);
            s.request(1);
            s.expectNone("rule 3.6: request after cancel is a no-op");
        });
    }

    @Test
    void required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops() throws Exception {
        active(1, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.cancel();
            s.cancel();
            s.cancel();
            s.expectNone("rule 3.7: cancel after cancel is a no-op");
        });
    }

    @Test
    void required_spec309_requestZeroMustSignalIllegalArgumentException() throws Exception {
        active(10, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(0);
            s.expectError(IllegalArgumentException.class, "rule 3.9: request(0)");
        });
    }

    @Test
    void required_spec309_requestNegativeNumberMustSignalIllegalArgumentException() throws Exception {
        active(10, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(-ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE));
            s.expectError(IllegalArgumentException.class, "rule 3.9: request(negative)");
        });
    }

    @Test
    void optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage() throws Exception {
        optional(10, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(-ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE));
            String m = String.valueOf(s.expectError(IllegalArgumentException.class, "rule 3.9").getMessage());
            assertTrue(m.contains("3.9") || m.contains("non-positive subscription request")
                    || m.contains("negative subscription request"), "rule 3.9: the message should cite the rule: " + m);
        });
    }

    @Test
    void required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling() throws Exception {
        active(20, false, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(10);
            s.request(5);
            s.nextElement("rule 3.12: emission started");
            s.cancel();
            int seen = 1;
            while (true) { // count stragglers until a quiet window
                List<Object> more = s.drained();
                Thread.sleep(env.noSignalsMs); // a window in which nothing may arrive
                more.addAll(s.drained());
                if (more.isEmpty()) break;
                seen += more.size();
                assertTrue(seen <= 15, "rule 3.12: " + seen + " elements after cancel, 15 were requested");
            }
            env.verifyNoAsyncErrors();
        });
    }

    @Test
    void required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber() throws Exception {
        active(3, false, pub -> {
            ReferenceQueue<ManualSubscriber> queue = new ReferenceQueue<>();
            WeakReference<ManualSubscriber> ref = subscribeAndCancel(pub, queue);
            boolean dropped = false;
            for (int i = 0; i < 20 && !dropped; i++) {
                System.gc();
                dropped = queue.remove(100) != null;
            }
            assertTrue(dropped, "rule 3.13: the publisher still references the subscriber after cancel");
            assertEquals(null, ref.get());
        });
    }

    private WeakReference<ManualSubscriber> subscribeAndCancel(Flow.Publisher<Object> pub, ReferenceQueue<ManualSubscriber> q)
            throws InterruptedException {
        ManualSubscriber s = subscribe(pub);
        WeakReference<ManualSubscriber> ref = new WeakReference<>(s, q);
        s.request(1);
        s.nextElement("rule 3.13");
        s.cancel();
        return ref;
    }

    @Test
    void required_spec317_mustSupportAPendingElementCountUpToLongMaxValue() throws Exception {
        active(3, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(Long.MAX_VALUE);
            s.nextElements(3, "rule 3.17");
            s.expectCompletion("rule 3.17");
        });
    }

    @Test
    void required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue() throws Exception {
        active(3, true, pub -> {
            ManualSubscriber s = subscribe(pub);
            s.request(Long.MAX_VALUE / 2);
            s.request(Long.MAX_VALUE / 2);
            s.request(1);
            s.nextElements(3, "rule 3.17");
            s.expectCompletion("rule 3.17");
        });
    }

    @Test
    void required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue() throws Exception {
        active(Integer.MAX_VALUE, false, pub -> {
            AtomicInteger calls = new AtomicInteger();
            CountDownLatch cancelled = new CountDownLatch(1);
            ManualSubscriber s = new ManualSubscriber(env) {
                @Override
                protected void whenNext(Object item) {
                    if (calls.incrementAndGet() <= 10) {
                        request(Long.MAX_VALUE - 1); // pending demand goes past Long.MAX_VALUE
                    } else {
                        cancel();
                        cancelled.countDown();
                    }
                }
            };
            pub.subscribe(s);
            s.awaitSubscription();
            s.request(1);
            assertTrue(cancelled.await(env.timeoutMs, TimeUnit.MILLISECONDS), "rule 3.17: elements stopped coming");
            env.verifyNoAsyncErrorsAfterQuietWindow();
            for (Object o : s.drained()) {
                if (o instanceof ManualSubscriber.Failure) {
                    throw new AssertionError("rule 3.17: onError for a pending demand above Long.MAX_VALUE",
                            ((ManualSubscriber.Failure) o).error);
                }
            }
        });
    }
}
