package rsspark.jvm.tck;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.Flow;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The JVM TCK's 26 SubscriberBlackboxVerification tests as JUnit 5 tests. Subclass, implement
 * {@link #createSubscriber}; override {@link #triggerRequest} when the subscriber's demand comes
 * from outside (the kit drives it from a {@link Stage}).
 */
public abstract class SubscriberBlackboxRules {
    public abstract Flow.Subscriber<Object> createSubscriber();

    public abstract Object createElement(int i);

    /** Make the subscriber request (for subscribers whose demand is triggered from outside). */
    public void triggerRequest(Flow.Subscriber<Object> subscriber) {}

    protected TckEnv env = new TckEnv(1000, 100);

    private Flow.Subscriber<Object> subscribed(Stage stage) {
        Flow.Subscriber<Object> s = createSubscriber();
        s.onSubscribe(stage);
        return s;
    }

    private static void untested(String rule, String why) {
        Assumptions.abort("untested: rule " + rule + " is not verified by this kit (" + why + ")");
    }

    @Test
    void required_spec201_blackbox_mustSignalDemandViaSubscriptionRequest() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        triggerRequest(s);
        stage.expectRequest("rule 2.1");
        stage.sendNext(s, createElement(0));
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec202_blackbox_shouldAsynchronouslyDispatch() {
        untested("2.2", "a SHOULD about threads");
    }

    @Test
    void required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        stage.sendComplete(s);
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnError() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        stage.sendError(s, new Stage.TestException());
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError() {
        untested("2.4", "not observable from outside");
    }

    @Test
    void required_spec205_blackbox_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal()
            throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        Stage second = new Stage(env);
        s.onSubscribe(second);
        assertTrue(second.awaitCancel(), "rule 2.5: a second subscription must be cancelled");
        second.expectNoRequest("rule 2.5: nothing may be requested from a second subscription");
        env.verifyNoAsyncErrors();
        stage.sendComplete(s);
    }

    @Test
    void untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid() {
        untested("2.6", "validity is the subscriber's own notion");
    }

    @Test
    void untested_spec207_blackbox_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization() {
        untested("2.7", "not observable from outside");
    }

    @Test
    void untested_spec208_blackbox_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel() {
        untested("2.8", "only the whitebox rules can cancel from outside");
    }

    @Test
    void required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        triggerRequest(s);
        stage.expectRequest("rule 2.9");
        stage.sendComplete(s);
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        stage.sendComplete(s);
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        triggerRequest(s);
        stage.expectRequest("rule 2.10");
        stage.sendError(s, new Stage.TestException());
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall() throws Exception {
        Stage stage = new Stage(env);
        Flow.Subscriber<Object> s = subscribed(stage);
        stage.sendError(s, new Stage.TestException());
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec211_blackbox_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents() {
        untested("2.11", "a memory-model rule");
    }

    @Test
    void untested_spec212_blackbox_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality() {
        untested("2.12", "a rule for publishers of subscribers");
    }

    @Test
    void untested_spec213_blackbox_failingOnSignalInvocation() {
        untested("2.13", "a subscriber that fails is allowed to throw");
    }

    @Test
    void required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull() {
        Flow.Subscriber<Object> s = createSubscriber();
        assertThrows(NullPointerException.class, () -> s.onSubscribe(null), "rule 2.13: onSubscribe(null)");
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull() {
        Flow.Subscriber<Object> s = createSubscriber();
        s.onSubscribe(Stage.noop());
        assertThrows(NullPointerException.class, () -> s.onNext(null), "rule 2.13: onNext(null)");
        env.verifyNoAsyncErrors();
    }

    @Test
    void required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull() {
        Flow.Subscriber<Object> s = createSubscriber();
        s.onSubscribe(Stage.noop());
        assertThrows(NullPointerException.class, () -> s.onError(null), "rule 2.13: onError(null)");
        env.verifyNoAsyncErrors();
    }

    @Test
    void untested_spec301_blackbox_mustNotBeCalledOutsideSubscriberContext() {
        untested("3.1", "not observable from outside");
    }

    @Test
    void untested_spec308_blackbox_requestMustRegisterGivenNumberElementsToBeProduced() {
        untested("3.8", "the whitebox rules test it");
    }

    @Test
    void untested_spec310_blackbox_requestMaySynchronouslyCallOnNextOnSubscriber() {
        untested("3.10", "a permission, nothing to check");
    }

    @Test
    void untested_spec311_blackbox_requestMaySynchronouslyCallOnCompleteOrOnError() {
        untested("3.11", "a permission, nothing to check");
    }

    @Test
    void untested_spec314_blackbox_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists() {
        untested("3.14", "a permission, nothing to check");
    }

    @Test
    void untested_spec315_blackbox_cancelMustNotThrowExceptionAndMustSignalOnError() {
        untested("3.15", "a rule for subscriptions");
    }

    @Test
    void untested_spec316_blackbox_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber() {
        untested("3.16", "a rule for subscriptions");
    }
}
