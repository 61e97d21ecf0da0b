package rsspark.jvm.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Flow;

import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * The kit checks itself: deliberately broken publishers and a subscriber that accepts null fail
 * the tests of the rule they break, each failure citing that rule, and nothing else; the same
 * publisher without its fault fails nothing.
 */
class RulesSelfCheckTest {
    // -- the subjects (nested, not named *Test: the console launcher does not pick them up) --

    static class Subject extends PublisherRules {
        RangePublisher.Fault fault() {
            return RangePublisher.Fault.NONE;
        }

        @Override
        public Flow.Publisher<Object> createPublisher(long elements) {
            return new RangePublisher(elements, fault());
        }
    }

    static final class OvershootingPublisherRules extends Subject {
        @Override
        RangePublisher.Fault fault() {
            return RangePublisher.Fault.OVERSHOOT;
        }
    }

    static final class SignalAfterCompletePublisherRules extends Subject {
        @Override
        RangePublisher.Fault fault() {
            return RangePublisher.Fault.SIGNAL_AFTER_COMPLETE;
        }
    }

    static final class ConcurrentSignalsPublisherRules extends Subject {
        @Override
        RangePublisher.Fault fault() {
            return RangePublisher.Fault.CONCURRENT_SIGNALS;
        }
    }

    static final class CorrectPublisherRules extends Subject {}

    /** Requests and cancels a second subscription, but takes null for any argument (rule 2.13 broken). */
    static final class NullAccepting implements Flow.Subscriber<Object> {
        private Flow.Subscription subscription;

        public synchronized void onSubscribe(Flow.Subscription s) {
            if (s == null) return;
            if (subscription != null) {
                s.cancel(); // rule 2.5 kept
                return;
            }
            subscription = s;
            s.request(1);
        }

        public void onNext(Object item) {}

        public void onError(Throwable t) {}

        public void onComplete() {}
    }

    static final class NullAcceptingBlackboxRules extends SubscriberBlackboxRules {
        public Flow.Subscriber<Object> createSubscriber() {
            return new NullAccepting();
        }

        public Object createElement(int i) {
            return i;
        }
    }

    // -- running a rule class and reading its results ---------------------------------

    /** Test method name -> failure message, for every test of {@code cls} that failed. */
    static Map<String, String> failures(Class<?> cls) {
        Map<String, String> failed = new TreeMap<>();
        Launcher launcher = LauncherFactory.create();
        launcher.execute(LauncherDiscoveryRequestBuilder.request().selectors(DiscoverySelectors.selectClass(cls)).build(),
                new TestExecutionListener() {
                    @Override
                    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
                        if (id.isTest() && result.getStatus() == TestExecutionResult.Status.FAILED) {
                            String name = id.getDisplayName().replace("()", "");
                            failed.put(name, String.valueOf(result.getThrowable().map(Throwable::getMessage).orElse("")));
                        }
                    }
                });
        return failed;
    }

    private static void assertFailsOnlyFor(Class<?> cls, String rule, Set<String> mustFail) {
        Map<String, String> failed = failures(cls);
        assertTrue(failed.keySet().containsAll(mustFail), cls.getSimpleName() + ": expected " + mustFail + " among the failures "
                + failed);
        failed.forEach((name, message) -> assertTrue(message.contains("rule " + rule),
                cls.getSimpleName() + "." + name + " failed for another reason than rule " + rule + ": " + message));
    }

    @Test
    void aCorrectPublisherFailsNothing() {
        assertEquals(Map.of(), failures(CorrectPublisherRules.class));
    }

    @Test
    void anOvershootingPublisherFailsTheRule101TestsOnly() {
        assertFailsOnlyFor(OvershootingPublisherRules.class, "1.1",
                Set.of("required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements"));
    }

    @Test
    void aPublisherSignallingAfterCompleteFailsTheRule107TestsOnly() {
        assertFailsOnlyFor(SignalAfterCompletePublisherRules.class, "1.7",
                Set.of("required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled"));
    }

    @Test
    void aPublisherSignallingConcurrentlyFailsTheRule103TestsOnly() {
        assertFailsOnlyFor(ConcurrentSignalsPublisherRules.class, "1.3",
                Set.of("stochastic_spec103_mustSignalOnMethodsSequentially"));
    }

    @Test
    void aSubscriberAcceptingNullFailsExactlyTheThreeRule213Tests() {
        Map<String, String> failed = failures(NullAcceptingBlackboxRules.class);
        assertEquals(Set.of("required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull",
                "required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull",
                "required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull"), failed.keySet());
        failed.values().forEach(m -> assertTrue(m.contains("rule 2.13"), m));
    }
}
