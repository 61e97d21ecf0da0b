package rsspark.jvm.tck;

import java.util.ArrayList;
import java.util.List;

/**
 * Timeouts and the errors seen on other threads ("soft" failures, as the JVM TCK's
 * {@code env.flop}): a rule broken inside a signal is recorded and fails the test at the next
 * {@link #verifyNoAsyncErrors}.
 */
public final class TckEnv {
    public final long timeoutMs;
    public final long noSignalsMs;
    private final List<AssertionError> asyncErrors = new ArrayList<>();

    public TckEnv(long timeoutMs, long noSignalsMs) {
        this.timeoutMs = timeoutMs;
        this.noSignalsMs = noSignalsMs;
    }

    public synchronized void flop(String message) {
        asyncErrors.add(new AssertionError(message));
    }

    public synchronized void flop(String message, Throwable cause) {
        asyncErrors.add(new AssertionError(message + ": " + cause, cause));
    }

    public synchronized List<AssertionError> asyncErrors() {
        return new ArrayList<>(asyncErrors);
    }

    /** The first error recorded on any thread, thrown on the test's. */
    public synchronized void verifyNoAsyncErrors() {
        if (!asyncErrors.isEmpty()) {
            AssertionError first = asyncErrors.get(0);
            AssertionError e = new AssertionError(first.getMessage()
                    + (asyncErrors.size() > 1 ? " (and " + (asyncErrors.size() - 1) + " more)" : ""), first.getCause());
            throw e;
        }
    }

    /** Like the JVM TCK's verifyNoAsyncErrors: check, wait the no-signals window, check again. */
    public void verifyNoAsyncErrorsAfterQuietWindow() throws InterruptedException {
        verifyNoAsyncErrors();
        Thread.sleep(noSignalsMs); // the rule is about what does NOT happen within the window
        verifyNoAsyncErrors();
    }
}
