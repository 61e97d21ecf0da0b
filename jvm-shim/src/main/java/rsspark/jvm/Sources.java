package rsspark.jvm;

import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.function.LongFunction;

/**
 * Ready-made JVM publishers for demos, notebooks, tests and benchmarks: the JDK's {@link SubmissionPublisher}
 * fed by a producer thread ({@code submit} blocks while the subscriber's buffer is full, so the
 * producer follows demand).
 */
public final class Sources {
    private Sources() {}

    /** Each subscribe gets its own SubmissionPublisher of {@code 0..n-1} (Long), then completes. */
    public static Flow.Publisher<Object> submissionLongs(long n) {
        return submission(n, i -> i);
    }

    /** Strings {@code "s-0" .. "s-(n-1)"}. */
    public static Flow.Publisher<Object> submissionStrings(long n) {
        return submission(n, i -> "s-" + i);
    }

    /** Fails with IllegalStateException(message) after {@code n} Longs (once they were consumed). */
    public static Flow.Publisher<Object> submissionFailing(long n, String message) {
        return subscriber -> {
            SubmissionPublisher<Object> p = new SubmissionPublisher<>();
            p.subscribe(subscriber);
            Thread t = new Thread(() -> {
                for (long i = 0; i < n && !p.isClosed(); i++) p.submit(i);
                // closeExceptionally is abrupt (drops what is buffered): fail once the n were consumed.
                while (p.estimateMaximumLag() > 0 && p.getNumberOfSubscribers() > 0) {
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                p.closeExceptionally(new IllegalStateException(message));
            }, "rs-spark-submission-producer");
            t.setDaemon(true);
            t.start();
        };
    }

    static Flow.Publisher<Object> submission(long n, LongFunction<Object> f) {
        return subscriber -> {
            SubmissionPublisher<Object> p = new SubmissionPublisher<>();
            p.subscribe(subscriber);
            Thread t = new Thread(() -> {
                for (long i = 0; i < n; i++) {
                    if (p.getNumberOfSubscribers() == 0) break; // cancelled
                    p.submit(f.apply(i));
                }
                p.close();
            }, "rs-spark-submission-producer");
            t.setDaemon(true);
            t.start();
        };
    }

    /** Never ends: Longs 0, 1, 2, ... as demanded. */
    public static Flow.Publisher<Object> submissionEndless() {
        return submission(Long.MAX_VALUE, i -> i);
    }
}
