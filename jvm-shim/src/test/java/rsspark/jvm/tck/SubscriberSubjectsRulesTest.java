package rsspark.jvm.tck;

import java.util.concurrent.Flow;

import org.junit.jupiter.api.Nested;

import rsspark.bench.NaiveBridge;
import rsspark.jvm.CollectingSubscriber;
import rsspark.jvm.PublisherBridge;

/** The shim's Flow.Subscribers against the blackbox and whitebox subscriber rules. */
class SubscriberSubjectsRulesTest {
    static PublisherBridge bridge() {
        // The bridge's own upstream is never started here: the rules drive it as a Subscriber.
        Flow.Publisher<Object> never = s -> { };
        return new PublisherBridge(never, "value:int64");
    }

    static WhiteboxProbe.Puppet bridgePuppet(Flow.Subscriber<Object> s) {
        PublisherBridge b = (PublisherBridge) s;
        return new WhiteboxProbe.Puppet() {
            public void triggerRequest(long n) {
                b.request(n); // what Python's request(n) does
            }

            public void signalCancel() {
                b.cancel();
            }
        };
    }

    static WhiteboxProbe.Puppet collectingPuppet(Flow.Subscriber<Object> s) {
        CollectingSubscriber c = (CollectingSubscriber) s;
        return new WhiteboxProbe.Puppet() {
            public void triggerRequest(long n) {
                // It requests its batch (16) up front and again when half is taken: at least n in total.
            }

            public void signalCancel() {
                c.cancel();
            }
        };
    }

    @Nested
    class PublisherBridgeBlackbox extends SubscriberBlackboxRules {
        public Flow.Subscriber<Object> createSubscriber() {
            return bridge();
        }

        public Object createElement(int i) {
            return (long) i;
        }

        @Override
        public void triggerRequest(Flow.Subscriber<Object> s) {
            ((PublisherBridge) s).request(1);
        }
    }

    @Nested
    class PublisherBridgeWhitebox extends SubscriberWhiteboxRules {
        public Flow.Subscriber<Object> createSubscriber(WhiteboxProbe probe) {
            return Subjects.probed(bridge(), probe, SubscriberSubjectsRulesTest::bridgePuppet);
        }

        public Object createElement(int i) {
            return (long) i;
        }
    }

    @Nested
    class NaiveBridgeBlackbox extends SubscriberBlackboxRules {
        public Flow.Subscriber<Object> createSubscriber() {
            Flow.Publisher<Object> never = s -> { };
            return NaiveBridge.of(never, 16); // the benchmark's one-element-per-call baseline (fixtures jar)
        }

        public Object createElement(int i) {
            return (long) i;
        }
    }

    @Nested
    class CollectingSubscriberBlackbox extends SubscriberBlackboxRules {
        public Flow.Subscriber<Object> createSubscriber() {
            return new CollectingSubscriber(16);
        }

        public Object createElement(int i) {
            return (long) i;
        }
    }

    @Nested
    class CollectingSubscriberWhitebox extends SubscriberWhiteboxRules {
        public Flow.Subscriber<Object> createSubscriber(WhiteboxProbe probe) {
            return Subjects.probed(new CollectingSubscriber(16), probe, SubscriberSubjectsRulesTest::collectingPuppet);
        }

        public Object createElement(int i) {
            return (long) i;
        }
    }
}
