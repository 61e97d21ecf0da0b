package rsspark.jvm;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/** The JVM-facing Subscriber side of JVM Publisher -> Python (spec section 2), and its batching. */
class PublisherBridgeTest {
    private static List<Object> drain(PublisherBridge b, int rows) throws Exception {
        List<Object> out = new ArrayList<>();
        while (true) {
            byte[] d = b.poll(rows, 2000, 2);
            assertNotNull(d, "nothing within 2 s");
            if (d.length == 0) return out;
            out.addAll(Util.column(d));
        }
    }

    @Test
    void submissionPublisherElementsArriveInOrderInBatchesOfAtMostMaxRows() throws Exception {
        try (PublisherBridge b = Shim.pull(Sources.submissionLongs(10_000), null)) {
            b.start();
            b.request(10_000);
            List<Object> got = new ArrayList<>();
            int batches = 0;
            while (true) {
                byte[] d = b.poll(3000, 2000, 2);
                assertNotNull(d);
                if (d.length == 0) break;
                List<Object> c = Util.column(d);
                assertTrue(c.size() <= 3000);
                got.addAll(c);
                batches++;
            }
            assertEquals("complete", b.state());
            assertEquals(10_000, got.size());
            for (int i = 0; i < got.size(); i++) assertEquals((long) i, got.get(i));
            assertTrue(batches >= 4);
            assertEquals("value:int64", b.schema());
        }
    }

    @Test
    void demandIsPassedThroughAndNothingIsBufferedBeyondIt() throws Exception {
        AtomicLong upstreamRequested = new AtomicLong();
        Flow.Publisher<Object> endless = s -> s.onSubscribe(new Flow.Subscription() {
            long next;
            public void request(long n) {
                upstreamRequested.addAndGet(n);
                for (long i = 0; i < n; i++) s.onNext(next++);
            }
            public void cancel() {}
        });
        try (PublisherBridge b = Shim.pull(endless, "value:int64")) {
            b.request(5); // before start: held until onSubscribe
            b.start();
            assertEquals(5, upstreamRequested.get());
            assertEquals(5, b.buffered());
            assertEquals(List.of(0L, 1L, 2L, 3L, 4L), Util.column(b.poll(100, 1000, 0)));
            assertNull(b.poll(100, 50, 0), "nothing more without demand");
            b.request(3);
            assertEquals(8, upstreamRequested.get());
            assertEquals(List.of(5L, 6L, 7L), Util.column(b.poll(100, 1000, 0)));
        }
    }

    @Test
    void spec_1_1_aPublisherSendingMoreThanRequestedFailsNamingTheRule() throws Exception {
        AtomicInteger cancels = new AtomicInteger();
        Flow.Publisher<Object> bad = s -> s.onSubscribe(new Flow.Subscription() {
            long i;
            public void request(long n) {
                for (long k = 0; k <= n; k++) s.onNext(i++);
            }
            public void cancel() { cancels.incrementAndGet(); }
        });
        try (PublisherBridge b = Shim.pull(bad, "value:int64")) {
            b.start();
            b.request(2);
            List<Object> got = drain(b, 100);
            assertEquals(List.of(0L, 1L), got);
            assertEquals("error", b.state());
            assertTrue(b.errorText().contains("rule 1.1"), b.errorText());
            for (int i = 0; i < 100 && cancels.get() == 0; i++) Thread.sleep(10);
            assertEquals(1, cancels.get());
        }
    }

    @Test
    void spec_2_5_aSecondOnSubscribeIsCancelled() {
        try (PublisherBridge b = Shim.pull(Sources.submissionLongs(1), null)) {
            AtomicInteger cancelled = new AtomicInteger();
            Flow.Subscription s = new Flow.Subscription() {
                public void request(long n) {}
                public void cancel() { cancelled.incrementAndGet(); }
            };
            b.onSubscribe(s);
            b.onSubscribe(s);
            assertEquals(1, cancelled.get());
        }
    }

    @Test
    void spec_2_13_nullSignalsThrowNullPointerException() {
        try (PublisherBridge b = Shim.pull(Sources.submissionLongs(1), null)) {
            assertThrows(NullPointerException.class, () -> b.onSubscribe(null));
            assertThrows(NullPointerException.class, () -> b.onNext(null));
            assertThrows(NullPointerException.class, () -> b.onError(null));
        }
    }

    @Test
    void spec_3_9_requestOfZeroIsRejected() {
        try (PublisherBridge b = Shim.pull(Sources.submissionLongs(1), null)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.request(0));
            assertTrue(e.getMessage().contains("3.9"));
        }
    }

    @Test
    void upstreamErrorsReachPythonAfterTheElementsBeforeThem() throws Exception {
        try (PublisherBridge b = Shim.pull(Sources.submissionFailing(3, "boom"), null)) {
            b.start();
            b.request(10);
            assertEquals(List.of(0L, 1L, 2L), drain(b, 100));
            assertEquals("error", b.state());
            assertEquals("java.lang.IllegalStateException: boom", b.errorText());
        }
    }

    @Test
    void aBadElementFailsTheStreamWithItsOffsetAndCancelsUpstream() throws Exception {
        SubmissionPublisher<Object> p = new SubmissionPublisher<>();
        try (PublisherBridge b = Shim.pull(p, "value:int64")) {
            b.start();
            b.request(10);
            for (int i = 0; i < 100 && p.getNumberOfSubscribers() == 0; i++) Thread.sleep(10);
            p.submit(1L);
            p.submit("x");
            for (int i = 0; i < 200 && b.received() < 2; i++) Thread.sleep(10);
            List<Object> got = drain(b, 100);
            assertEquals(List.of(1L), got);
            assertEquals("error", b.state());
            assertTrue(b.errorText().contains("offset 1"), b.errorText());
            for (int i = 0; i < 200 && p.getNumberOfSubscribers() > 0; i++) Thread.sleep(10);
            assertEquals(0, p.getNumberOfSubscribers(), "upstream cancelled");
        }
    }

    @Test
    void cancelStopsUpstreamAndWakesThePoller() throws Exception {
        long before = Memory.allocated(); // what other tests' threads may still hold is theirs, not this bridge's
        try (PublisherBridge b = Shim.pull(Sources.submissionEndless(), null)) {
            b.start();
            b.request(10);
            Thread poller = Thread.currentThread();
            Thread t = new Thread(() -> {
                // Cancel once the poller waits in drain for elements that never come: the cancel must wake it.
                while (poller.getState() != Thread.State.WAITING && poller.getState() != Thread.State.TIMED_WAITING) {
                    Thread.onSpinWait();
                }
                b.cancel();
            });
            t.start();
            drain(b, 1000); // ends with the empty array once cancelled
            assertEquals("cancelled", b.state());
            assertEquals(0, b.buffered());
        }
        assertEquals(before, Memory.allocated(), "every Arrow buffer this bridge took released");
    }

    // -- the unboxed long[] path, batch sizing and the file hand-off ----------------------

    /** A Publisher that emits {@code items} (in order) as they are requested, on the caller's thread. */
    private static Flow.Publisher<Object> of(List<Object> items) {
        return s -> s.onSubscribe(new Flow.Subscription() {
            int next;
            public void request(long n) {
                for (long k = 0; k < n && next < items.size(); k++) s.onNext(items.get(next++));
                if (next == items.size()) s.onComplete();
            }
            public void cancel() {}
        });
    }

    @Test
    void longFastPathSizesAndValuesIncludingPartialValidityBytes() throws Exception {
        for (int n : new int[] {1, 7, 8, 9, 63, 64, 65, 1000, 65_537}) {
            List<Object> items = new ArrayList<>();
            for (long i = 0; i < n; i++) items.add(i * 3 - 7);
            try (PublisherBridge b = Shim.pull(of(items), null)) {
                b.start();
                b.request(n);
                List<Object> got = drain(b, 50_000);
                assertEquals(items, got, "n=" + n);
                assertEquals("value:int64", b.schema());
            }
        }
    }

    @Test
    void aNonLongAfterLongsLeavesTheFastPathKeepingOrderAndFailsNamingTheOffset() throws Exception {
        List<Object> items = new ArrayList<>(List.of(1L, 2L, 3L, "four", 5L));
        try (PublisherBridge b = Shim.pull(of(items), "value:int64")) {
            b.start();
            b.request(5);
            byte[] d = b.poll(100, 2000, 0);
            assertEquals(List.of(1L, 2L, 3L), Util.column(d), "the rows before the bad element");
            assertEquals("error", b.state());
            assertTrue(b.errorText().contains("offset 3"), b.errorText());
        }
        // an int64 schema with Integer elements: boxed path, values widened
        try (PublisherBridge b = Shim.pull(of(new ArrayList<>(List.of(1, 2, 3))), "value:int64")) {
            b.start();
            b.request(3);
            assertEquals(List.of(1L, 2L, 3L), drain(b, 100));
        }
    }

    @Test
    void aStringPublisherWithoutSchemaUsesTheBoxedPath() throws Exception {
        try (PublisherBridge b = Shim.pull(Sources.submissionStrings(3000), null)) {
            b.start();
            b.request(3000);
            List<Object> got = drain(b, 1000);
            assertEquals(3000, got.size());
            assertEquals("s-2999", got.get(2999));
            assertEquals("value:string", b.schema());
        }
    }

    @Test
    void pollSplitsABacklogLargerThanMaxRowsInOrder() throws Exception {
        List<Object> items = new ArrayList<>();
        for (long i = 0; i < 10_000; i++) items.add(i);
        try (PublisherBridge b = Shim.pull(of(items), null)) {
            b.request(10_000);
            b.start(); // everything arrives in onSubscribe's request: one backlog
            assertEquals(10_000, b.buffered());
            List<Object> first = Util.column(b.poll(4096, 1000, 0));
            assertEquals(4096, first.size());
            assertEquals(10_000 - 4096, b.buffered());
            List<Object> all = new ArrayList<>(first);
            all.addAll(drain(b, 4096));
            assertEquals(items, all);
        }
    }

    /** Elements {@code 0, 1, ...} every {@code periodMs} from a timer thread, as requested. */
    private static Flow.Publisher<Object> ticking(long periodMs) {
        return s -> {
            AtomicLong demand = new AtomicLong();
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Thread t = new Thread(() -> {
                long i = 0;
                while (!stop.get()) {
                    if (demand.get() > 0) {
                        demand.decrementAndGet();
                        s.onNext(i++);
                    }
                    try {
                        Thread.sleep(periodMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            t.setDaemon(true);
            s.onSubscribe(new Flow.Subscription() {
                public void request(long n) {
                    demand.addAndGet(n);
                }
                public void cancel() {
                    stop.set(true);
                }
            });
            t.start();
        };
    }

    @Test
    void aSteadyStreamFillsTheBatchUntilMaxLingerAQuietOneLeavesAfterLinger() throws Exception {
        try (PublisherBridge b = Shim.pull(ticking(1), null)) {
            b.start();
            b.request(100_000);
            assertNotNull(b.poll(100_000, 2000, 0)); // the first element(s)
            long t = System.nanoTime();
            // elements every ~1 ms, never quiet for 20 ms: the batch leaves after maxLinger (200 ms)
            List<Object> c = Util.column(b.poll(100_000, 2000, 20, 200));
            long ms = (System.nanoTime() - t) / 1_000_000;
            assertTrue(ms >= 190 && ms < 1500, "took " + ms + " ms");
            assertTrue(c.size() > 20, "only " + c.size() + " rows in 200 ms");
        }
        try (PublisherBridge b = Shim.pull(ticking(100), null)) {
            b.start();
            b.request(100_000);
            assertNotNull(b.poll(100_000, 2000, 0));
            long t = System.nanoTime();
            // one element per 100 ms, linger 10 ms: a batch of one leaves ~10 ms after it came
            List<Object> c = Util.column(b.poll(100_000, 2000, 10, 5000));
            long ms = (System.nanoTime() - t) / 1_000_000;
            assertEquals(1, c.size());
            assertTrue(ms < 1000, "took " + ms + " ms");
        }
    }

    @Test
    void pollIntoWritesTheIpcStreamIntoTheFile() throws Exception {
        // As Python hands off: a name in a private folder; each batch file is new (the reader unlinks it).
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("rs-spark-test-");
        java.nio.file.Path f = dir.resolve("batch.arrow");
        try (PublisherBridge b = Shim.pull(Sources.submissionLongs(5000), null)) {
            b.start();
            b.request(5000);
            List<Object> got = new ArrayList<>();
            while (true) {
                long n = b.pollInto(f.toString(), 2048, 2000, 2, 50);
                assertTrue(n >= 0, "nothing within 2 s");
                if (n == 0) break;
                byte[] d = java.nio.file.Files.readAllBytes(f);
                assertEquals(n, d.length);
                assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"),
                        java.nio.file.Files.getPosixFilePermissions(f));
                java.nio.file.Files.delete(f);
                got.addAll(Util.column(d));
            }
            assertEquals(5000, got.size());
            for (int i = 0; i < 5000; i++) assertEquals((long) i, got.get(i));
        } finally {
            java.nio.file.Files.deleteIfExists(f);
            java.nio.file.Files.deleteIfExists(dir);
        }
    }

    @Test
    void pollIntoNeverWritesThroughAnExistingFileOrLink() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("rs-spark-test-");
        java.nio.file.Path victim = java.nio.file.Files.write(dir.resolve("victim"), new byte[] {1, 2, 3});
        java.nio.file.Path f = java.nio.file.Files.createSymbolicLink(dir.resolve("batch.arrow"), victim);
        try (PublisherBridge b = Shim.pull(Sources.submissionLongs(10), null)) {
            b.start();
            b.request(10);
            assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> b.pollInto(f.toString(), 10, 2000, 2, 50));
            assertArrayEquals(new byte[] {1, 2, 3}, java.nio.file.Files.readAllBytes(victim));
        } finally {
            java.nio.file.Files.deleteIfExists(f);
            java.nio.file.Files.deleteIfExists(victim);
            java.nio.file.Files.deleteIfExists(dir);
        }
    }
}
