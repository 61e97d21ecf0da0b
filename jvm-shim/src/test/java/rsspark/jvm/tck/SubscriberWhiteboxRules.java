package rsspark.jvm.tck;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.Flow;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The JVM TCK's 27 SubscriberWhiteboxVerification tests as JUnit 5 tests. Subclass and implement
 * {@link #createSubscriber}: a Subscriber that reports to the probe (registerOnSubscribe with a
 * puppet, then registerOnNext / registerOnError / registerOnComplete).
 */
public abstract class SubscriberWhiteboxRules {
    public abstract Flow.Subscriber<Object> createSubscriber(WhiteboxProbe probe);

    public abstract Object createElement(int i);

    protected TckEnv env = new TckEnv(1000, 100);

    /** A subscriber under test, subscribed to a stage, and its probe and puppet. */
    final class Setup {
        final Stage stage = new Stage(env);
        final WhiteboxProbe probe = new WhiteboxProbe(env);
        final Flow.Subscriber<Object> sub = createSubscriber(probe);
        final WhiteboxProbe.Puppet puppet;

        Setup() throws Exception {
            sub.onSubscribe(stage);
            puppet = probe.puppet();
            env.verifyNoAsyncErrors();
        }

        void sendNextAndExpect(int i, String rule) throws InterruptedException {
            Object e = createElement(i);
            stage.sendNext(sub, e);
            probe.expectNext(e, rule);
        }
    }

    private static void untested(String rule, String why) {
        Assumptions.abort("untested: rule " + rule + " is not verified by this kit (" + why + ")");
    }

    @Test
    void required_exerciseWhiteboxHappyPath() throws Exception {
        Setup t = new Setup();
        t.puppet.triggerRequest(1);
        t.puppet.triggerRequest(1);
        long r = t.stage.expectRequest("happy path");
        t.sendNextAndExpect(0, "happy path");
        t.puppet.triggerRequest(1);
        if (r == 1) t.stage.expectRequest("happy path");
        t.sendNextAndExpect(1, "happy path");
        t.puppet.signalCancel();
        assertTrue(t.stage.awaitCancel(), "the puppet's signalCancel did not cancel the subscription");
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void required_spec201_mustSignalDemandViaSubscriptionRequest() throws Exception {
        Setup t = new Setup();
        t.puppet.triggerRequest(1);
        t.stage.expectRequest("rule 2.1");
        t.sendNextAndExpect(0, "rule 2.1");
    }

    @Test
    void untested_spec202_shouldAsynchronouslyDispatch() {
        untested("2.2", "a SHOULD about threads");
    }

    @Test
    void required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete() throws Exception {
        Setup t = new Setup();
        t.stage.sendComplete(t.sub);
        t.probe.expectComplete("rule 2.3");
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnError() throws Exception {
        Setup t = new Setup();
        Stage.TestException ex = new Stage.TestException();
        t.stage.sendError(t.sub, ex);
        t.probe.expectError(ex, "rule 2.3");
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError() {
        untested("2.4", "not observable from outside");
    }

    @Test
    void required_spec205_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal()
            throws Exception {
        Setup t = new Setup();
        Stage second = new Stage(env);
        t.sub.onSubscribe(second);
        assertTrue(second.awaitCancel(), "rule 2.5: a second subscription must be cancelled");
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid() {
        untested("2.6", "validity is the subscriber's own notion");
    }

    @Test
    void untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization() {
        untested("2.7", "not observable from outside");
    }

    @Test
    void required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel() throws Exception {
        Setup t = new Setup();
        t.puppet.triggerRequest(1);
        t.stage.expectRequest("rule 2.8");
        t.puppet.signalCancel();
        assertTrue(t.stage.awaitCancel(), "rule 2.8: signalCancel did not cancel");
        t.stage.sendNext(t.sub, createElement(0)); // in flight when cancel was called: must not break
        t.puppet.triggerRequest(1);
        t.puppet.triggerRequest(1);
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall() throws Exception {
        Setup t = new Setup();
        t.puppet.triggerRequest(1);
        t.stage.sendComplete(t.sub);
        t.probe.expectComplete("rule 2.9");
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall() throws Exception {
        Setup t = new Setup();
        t.stage.sendComplete(t.sub);
        t.probe.expectComplete("rule 2.9");
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall() throws Exception {
        Setup t = new Setup();
        t.puppet.triggerRequest(1);
        t.puppet.triggerRequest(1);
        Stage.TestException ex = new Stage.TestException();
        t.stage.sendError(t.sub, ex);
        t.probe.expectError(ex, "rule 2.10");
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall() throws Exception {
        Setup t = new Setup();
        Stage.TestException ex = new Stage.TestException();
        t.stage.sendError(t.sub, ex);
        t.probe.expectError(ex, "rule 2.10");
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents() {
        untested("2.11", "a memory-model rule");
    }

    @Test
    void untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation() {
        untested("2.12", "a rule for publishers of subscribers");
    }

    @Test
    void untested_spec213_failingOnSignalInvocation() {
        untested("2.13", "a subscriber that fails is allowed to throw");
    }

    @Test
    void required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull() throws Exception {
        Setup t = new Setup();
        assertThrows(NullPointerException.class, () -> t.sub.onSubscribe(null), "rule 2.13: onSubscribe(null)");
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull() throws Exception {
        Setup t = new Setup();
        assertThrows(NullPointerException.class, () -> t.sub.onNext(null), "rule 2.13: onNext(null)");
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull() throws Exception {
        Setup t = new Setup();
        assertThrows(NullPointerException.class, () -> t.sub.onError(null), "rule 2.13: onError(null)");
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec301_mustNotBeCalledOutsideSubscriberContext() {
        untested("3.1", "not observable from outside");
    }

    @Test
    void required_spec308_requestMustRegisterGivenNumberElementsToBeProduced() throws Exception {
        Setup t = new Setup();
        t.puppet.triggerRequest(2);
        long r = t.stage.expectRequest("rule 3.8");
        t.sendNextAndExpect(0, "rule 3.8");
        if (r < 2) t.stage.expectRequest("rule 3.8");
        t.sendNextAndExpect(1, "rule 3.8");
        t.probe.expectNone("rule 3.8");
        t.puppet.triggerRequest(3);
        env.verifyNoAsyncErrorsAfterQuietWindow();
    }

    @Test
    void untested_spec310_requestMaySynchronouslyCallOnNextOnSubscriber() {
        untested("3.10", "a permission, nothing to check");
    }

    @Test
    void untested_spec311_requestMaySynchronouslyCallOnCompleteOrOnError() {
        untested("3.11", "a permission, nothing to check");
    }

    @Test
    void untested_spec314_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists() {
        untested("3.14", "a permission, nothing to check");
    }

    @Test
    void untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError() {
        untested("3.15", "a rule for subscriptions");
    }

    @Test
    void untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber() {
        untested("3.16", "a rule for subscriptions");
    }
}
