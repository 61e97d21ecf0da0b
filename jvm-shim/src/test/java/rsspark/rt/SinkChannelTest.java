package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

import rsspark.rsocket.ArrowPayloads;
import rsspark.rsocket.Endpoint;
import rsspark.rsocket.Frame;
import rsspark.rsocket.Frames;
import rsspark.rsocket.PythonFixture;

/**
 * One sink task's channel into the delivery hub (SinkChannel): against the Python hub
 * (fixture_server sink) for delivery, the acknowledgement and a replayed epoch; against a scripted
 * hub for pacing (the queue bound, the hub's credits, rows per payload) and how it ends.
 */
class SinkChannelTest {
    static final StructType SCHEMA = StructType.fromDDL("id BIGINT");

    static ReactiveSinkWriter.SinkOptions options(String... kv) {
        return ReactiveSinkWriter.SinkOptions.parse(RtOptionsTest.opts(kv));
    }

    static void addAll(SinkChannel c, long from, long to) throws IOException {
        for (long i = from; i < to; i++) c.add(RowFactory.create(i));
    }

    static List<Long> rowsSeen(PythonFixture py) {
        List<Long> out = new ArrayList<>();
        for (String l : py.lines()) if (l.startsWith("ROW ")) out.add(Long.parseLong(l.substring(4)));
        return out;
    }

    @Test
    void anEpochsRowsReachTheSubscriberInOrderAndAReplayedEpochIsNotDeliveredTwice() throws Exception {
        try (PythonFixture py = new PythonFixture("sink")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            SinkChannel c = SinkChannel.open(ep, SCHEMA, options(), 0, 0);
            addAll(c, 0, 50);
            c.finish(); // returns once the hub answered that every row reached on_next
            py.await(l -> l.equals("ROW 49"), "row 49");
            assertEquals(JvmFeedTest.range(0, 50), rowsSeen(py));

            SinkChannel again = SinkChannel.open(ep, SCHEMA, options(), 0, 0); // a retried task of epoch 0
            addAll(again, 0, 50);
            again.finish(); // the hub answers "duplicate": nothing is lost, nothing sent twice
            SinkChannel next = SinkChannel.open(ep, SCHEMA, options(), 0, 1);
            addAll(next, 100, 101);
            next.finish();
            py.await(l -> l.equals("ROW 100"), "row 100 of epoch 1");
            List<Long> want = JvmFeedTest.range(0, 50);
            want.add(100L);
            assertEquals(want, rowsSeen(py));
        }
    }

    static ReactiveSinkWriter.SinkOptions fast(String... more) {
        List<String> kv = new ArrayList<>(List.of("keepaliveInterval", "200ms", "keepaliveTimeout", "1s",
                "connectTimeout", "1s", "reconnectBackoff", "50ms", "reconnectBackoffMax", "500ms"));
        kv.addAll(List.of(more));
        return options(kv.toArray(new String[0]));
    }

    /** Wait {@code millis} while an outage lasts (time passing is the fault under test, not a synchronisation). */
    static void outageFor(long millis) throws InterruptedException {
        Thread.sleep(millis);
    }

    /**
     * The hub becomes unreachable mid-epoch (reset, then a black hole longer than the keepalive lifetime):
     * the task keeps writing, the channel sends what the epoch sent so far again on a new channel, and the
     * hub's ledger skips the rows it delivered: every row once, in order, and the epoch succeeds.
     */
    @Test
    void aLostConnectionToTheHubIsRecoveredSendingTheEpochAgainWithoutDuplicates() throws Exception {
        try (PythonFixture py = new PythonFixture("sink");
                rsspark.rsocket.FaultRelay relay = new rsspark.rsocket.FaultRelay(Endpoint.parse(py.address(), null))) {
            Endpoint ep = Endpoint.parse(relay.address(py.address()), null);
            SinkChannel c = SinkChannel.open(ep, SCHEMA, fast(), 0, 0);
            addAll(c, 0, 30);
            py.await(l -> l.equals("ROW 29"), "row 29");
            relay.reset();
            addAll(c, 30, 60); // into the outage
            outageFor(1500);
            relay.heal();
            addAll(c, 60, 90);
            py.await(l -> l.equals("ROW 89"), "row 89");
            relay.blackHole();
            addAll(c, 90, 120);
            outageFor(3000); // three keepalive lifetimes
            relay.heal();
            addAll(c, 120, 150);
            c.finish();
            py.await(l -> l.equals("ROW 149"), "row 149");
            assertEquals(JvmFeedTest.range(0, 150), rowsSeen(py), "rows lost or delivered twice");
        }
    }

    @Test
    void anEpochLargerThanMaxRetainedRowsOrAHubGoneLongerThanReconnectTimeoutFailsSayingWhy() throws Exception {
        try (PythonFixture py = new PythonFixture("sink");
                rsspark.rsocket.FaultRelay relay = new rsspark.rsocket.FaultRelay(Endpoint.parse(py.address(), null))) {
            Endpoint ep = Endpoint.parse(relay.address(py.address()), null);
            SinkChannel big = SinkChannel.open(ep, SCHEMA, fast("maxRetainedRows", "10"), 0, 0);
            addAll(big, 0, 20);
            py.await(l -> l.equals("ROW 19"), "row 19");
            relay.reset();
            relay.heal();
            IOException e = assertThrows(IOException.class, () -> {
                addAll(big, 20, 30);
                big.finish();
            });
            assertTrue(e.getMessage().contains("after more than maxRetainedRows=10 rows of epoch 0 were sent"), e.getMessage());

            SinkChannel gone = SinkChannel.open(ep, SCHEMA, fast("reconnectTimeout", "2s"), 0, 1);
            addAll(gone, 0, 5);
            py.await(l -> l.equals("ROW 4"), "row 4 of epoch 1");
            relay.reset();
            e = assertThrows(IOException.class, gone::finish);
            assertTrue(e.getMessage().contains("was unreachable for reconnectTimeout=2000 ms while writing epoch 1"),
                    e.getMessage());
            assertFalse(e.getMessage().contains(ep.token), "the token leaked into " + e.getMessage());
        }
    }

    /**
     * A stopped query's epoch is run again from its start, but Spark decides its end afresh: this
     * time it ends before any row, and its channel sends nothing. The rows the stopped run delivered
     * are then the first rows of the next epoch: the hub's ledger knows that epoch 5 never ended and
     * skips them there (it used to deliver them twice).
     */
    @Test
    void anEpochRunAgainWithoutRowsNamesItselfSoTheNextEpochSkipsTheRowsDeliveredBefore() throws Exception {
        try (PythonFixture py = new PythonFixture("sink")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            SinkChannel first = SinkChannel.open(ep, SCHEMA, options(), 1, 5); // partition 1, epoch 5
            addAll(first, 0, 10);
            py.await(l -> l.equals("ROW 9"), "row 9");
            first.abort("the query stopped"); // mid-epoch: Spark commits nothing of epoch 5
            SinkChannel again = SinkChannel.open(ep, SCHEMA, options(), 1, 5); // epoch 5 again: no rows this time
            again.finish();
            SinkChannel next = SinkChannel.open(ep, SCHEMA, options(), 1, 6); // reads on from epoch 5's start
            addAll(next, 0, 16);
            next.finish();
            py.await(l -> l.equals("ROW 15"), "row 15");
            assertEquals(JvmFeedTest.range(0, 16), rowsSeen(py), "rows delivered twice or lost");
        }
    }

    /**
     * Two stops within one epoch: the second attempt ended after 6 rows (the 4 more the first
     * delivered carried over), and the third ended before any row. The empty attempt names itself
     * (a payload of 0 rows), so the hub knows all 10 rows delivered are the next epoch's first.
     */
    @Test
    void anEmptyThirdAttemptOfAnEpochCarriesEveryRowDeliveredToTheNextEpoch() throws Exception {
        try (PythonFixture py = new PythonFixture("sink")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            SinkChannel first = SinkChannel.open(ep, SCHEMA, options(), 1, 5);
            addAll(first, 0, 10);
            py.await(l -> l.equals("ROW 9"), "row 9");
            first.abort("the query stopped");
            SinkChannel second = SinkChannel.open(ep, SCHEMA, options(), 1, 5); // ends after 6 rows, all delivered before
            addAll(second, 0, 6);
            second.finish();
            SinkChannel third = SinkChannel.open(ep, SCHEMA, options(), 1, 5); // stopped again; now no rows at all
            third.finish();
            SinkChannel next = SinkChannel.open(ep, SCHEMA, options(), 1, 6);
            addAll(next, 0, 16);
            next.finish();
            py.await(l -> l.equals("ROW 15"), "row 15");
            assertEquals(JvmFeedTest.range(0, 16), rowsSeen(py), "rows delivered twice or lost");
        }
    }

    static long rows(Frame payload) throws Exception {
        byte[] b = payload.data();
        try (VectorSchemaRoot r = ArrowPayloads.decode(b, 0, b.length, Feeds.allocator(), "the channel")) {
            return r.getRowCount();
        }
    }

    static List<Long> ids(List<Frame> payloads) throws Exception {
        List<Long> out = new ArrayList<>();
        for (Frame p : payloads) {
            if (!p.has(Frames.FLAG_NEXT)) continue;
            byte[] b = p.data();
            try (VectorSchemaRoot r = ArrowPayloads.decode(b, 0, b.length, Feeds.allocator(), "the channel")) {
                BigIntVector v = (BigIntVector) r.getVector("id");
                for (int i = 0; i < r.getRowCount(); i++) out.add(v.get(i));
                assertEquals(Map.of("rs_spark.batch_id", "3", "rs_spark.partition", "0", "rs_spark.open_ended", "1"),
                        Map.of("rs_spark.batch_id", r.getSchema().getCustomMetadata().get("rs_spark.batch_id"),
                                "rs_spark.partition", r.getSchema().getCustomMetadata().get("rs_spark.partition"),
                                "rs_spark.open_ended", r.getSchema().getCustomMetadata().get("rs_spark.open_ended")));
            }
        }
        return out;
    }

    static void waitUntilBlocked(Thread t) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(t.isAlive(), "the adding thread ended instead of waiting");
            assertTrue(System.currentTimeMillis() < deadline, "the adding thread never waited: " + t.getState());
            Thread.sleep(5);
        }
    }

    @Test
    void rowsWaitWithinMaxQueuedRowsLeaveWithinTheHubsCreditAndMaxRowsPerPayloadThenTheEndWaitsForTheAnswer()
            throws Exception {
        try (ScriptedHub hub = new ScriptedHub()) {
            SinkChannel c = SinkChannel.open(Endpoint.parse(hub.address(), null), SCHEMA,
                    options("maxQueuedRows", "8", "maxRowsPerPayload", "3", "ackTimeout", "1s"), 0, 3);
            hub.await(f -> !ScriptedHub.ofType(f, Frames.REQUEST_CHANNEL).isEmpty(), "REQUEST_CHANNEL");
            addAll(c, 0, 8); // no credit yet: all 8 wait in the queue
            AtomicReference<Throwable> ninth = new AtomicReference<>();
            Thread adder = new Thread(() -> {
                try {
                    c.add(RowFactory.create(8L));
                } catch (Throwable e) {
                    ninth.set(e);
                }
            }, "ninth-row");
            adder.start();
            waitUntilBlocked(adder); // the 9th row waits: maxQueuedRows=8

            hub.send(Frames.requestN(1, 5));
            List<Frame> first = hub.await(f -> rowsIn(f) >= 5, "5 rows");
            adder.join(30_000);
            assertFalse(adder.isAlive(), "the 9th row still waits after 5 left the queue");
            assertNull(ninth.get());
            assertEquals(5, rowsIn(first), "more rows than the hub's credit of 5");
            for (Frame p : ScriptedHub.ofType(first, Frames.PAYLOAD)) assertTrue(rows(p) <= 3, "over maxRowsPerPayload");

            hub.send(Frames.requestN(1, 100));
            List<Frame> all = hub.await(f -> rowsIn(f) >= 9, "9 rows");
            assertEquals(JvmFeedTest.range(0, 9), ids(ScriptedHub.ofType(all, Frames.PAYLOAD)));
            for (Frame p : ScriptedHub.ofType(all, Frames.PAYLOAD)) if (p.has(Frames.FLAG_NEXT)) assertTrue(rows(p) <= 3);

            IOException e = assertThrows(IOException.class, c::finish); // the hub never answers
            assertTrue(e.getMessage().contains("did not answer within 1 s after the last of 9 rows"), e.getMessage());
            assertFalse(e.getMessage().contains("SECRET"), e.getMessage());
            List<Frame> end = hub.await(f -> ScriptedHub.ofType(f, Frames.PAYLOAD).stream()
                    .anyMatch(p -> p.has(Frames.FLAG_COMPLETE)), "the end of the epoch (COMPLETE)");
            assertEquals(9, rowsIn(end), "rows after the end");
        }
    }

    @Test
    void anAbortedChannelTellsTheHubWhyWithAnError() throws Exception {
        try (ScriptedHub hub = new ScriptedHub()) {
            SinkChannel c = SinkChannel.open(Endpoint.parse(hub.address(), null), SCHEMA, options(), 0, 3);
            addAll(c, 0, 2);
            c.abort("the Spark task failed: boom");
            List<Frame> f = hub.await(fs -> !ScriptedHub.ofType(fs, Frames.ERROR).isEmpty(), "ERROR");
            Frame err = ScriptedHub.ofType(f, Frames.ERROR).get(0);
            assertEquals(1, err.streamId());
            assertEquals(Frames.APPLICATION_ERROR, err.errorCode());
            assertEquals("the Spark task failed: boom", err.text());
            assertEquals(0, rowsIn(f), "rows sent without credit");
        }
    }

    /** Rows as our source hands them: each marked handed (TaskChunks.rowHanded), then added. */
    static void addHanded(SinkChannel c, long from, long to) throws IOException {
        for (long i = from; i < to; i++) {
            TaskChunks.rowHanded();
            c.add(RowFactory.create(i));
        }
    }

    /** A channel of epoch 3 for task attempt {@code task} on {@code hub}, once the hub granted 1000 rows. */
    static SinkChannel openWithCredit(ScriptedHub hub, ReactiveSinkWriter.SinkOptions o, long task, long maxHoldNanos)
            throws Exception {
        SinkChannel c = SinkChannel.open(Endpoint.parse(hub.address(), null), SCHEMA, o, 0, 3, task, maxHoldNanos);
        hub.await(f -> !ScriptedHub.ofType(f, Frames.REQUEST_CHANNEL).isEmpty(), "REQUEST_CHANNEL");
        hub.send(Frames.requestN(1, 1000));
        return c;
    }

    static Thread senderOf(long epoch) {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("rs-spark-sink-sender epoch " + epoch)) return t;
        }
        throw new AssertionError("no sender thread for epoch " + epoch);
    }

    /**
     * With our source reading in the same task, a chunk's rows leave as one payload when the source
     * says the chunk ended; rows no chunk end follows still leave once the queue holds
     * maxRowsPerPayload, or maxQueuedRows, so the task never waits on a sender that sleeps.
     */
    @Test
    void withOurSourceInTheTaskAChunksRowsLeaveAsOnePayloadAtTheChunksEnd() throws Exception {
        long task = 42;
        TaskChunks.sourceOpened(task);
        try (ScriptedHub hub = new ScriptedHub()) {
            SinkChannel c = openWithCredit(hub, options("maxQueuedRows", "4", "maxRowsPerPayload", "100", "ackTimeout", "1s"),
                    task, TimeUnit.SECONDS.toNanos(60)); // no bound on holding here: this test's pace is its own
            Thread sender = senderOf(3);
            for (int chunk = 1; chunk <= 20; chunk++) { // row by row, some chunk would go in two payloads or more
                waitUntilBlocked(sender); // back from the last payload, waiting for rows
                addHanded(c, 3 * (chunk - 1), 3 * chunk);
                TaskChunks.chunkEnded();
                int rowsSoFar = 3 * chunk;
                List<Frame> f = hub.await(fs -> rowsIn(fs) >= rowsSoFar, "chunk " + chunk + "'s 3 rows");
                assertEquals(chunk, ScriptedHub.ofType(f, Frames.PAYLOAD).size(), "chunk " + chunk + " left in several payloads");
            }
            addHanded(c, 60, 70); // a chunk longer than maxQueuedRows=4: sent as the queue fills, no deadlock
            TaskChunks.chunkEnded();
            List<Frame> all = hub.await(f -> rowsIn(f) >= 70, "70 rows");
            assertEquals(JvmFeedTest.range(0, 70), ids(ScriptedHub.ofType(all, Frames.PAYLOAD)));
            c.abort("the test is over");
        } finally {
            TaskChunks.sourceClosed();
        }
    }

    /**
     * Holding never adds much: a row that took longer than the bound to come through (a slow
     * transformation) leaves at once, and held rows leave once the oldest has waited the bound,
     * both without a chunk's end.
     */
    @Test
    void aSlowRowLeavesAtOnceAndHeldRowsLeaveOnceTheOldestWaitedTheBound() throws Exception {
        long task = 42;
        TaskChunks.sourceOpened(task);
        try (ScriptedHub hub = new ScriptedHub()) {
            SinkChannel c = openWithCredit(hub, options(), task, TimeUnit.MILLISECONDS.toNanos(20));
            TaskChunks.rowHanded();
            Thread.sleep(50); // not synchronisation: a transformation that takes 50 ms for this row
            c.add(RowFactory.create(0L));
            hub.await(fs -> rowsIn(fs) >= 1, "the slow row, without a chunk's end");

            waitUntilBlocked(senderOf(3));
            addHanded(c, 1, 2); // fast: held for the chunk's end
            Thread.sleep(50); // not synchronisation: time passes in the task (the bound is 20 ms)
            addHanded(c, 2, 3); // the oldest held row has waited over the bound: both leave
            List<Frame> f = hub.await(fs -> rowsIn(fs) >= 3, "the held rows, without a chunk's end");
            assertEquals(JvmFeedTest.range(0, 3), ids(ScriptedHub.ofType(f, Frames.PAYLOAD)));
            c.abort("the test is over");
        } finally {
            TaskChunks.sourceClosed();
        }
    }

    /** A source of another task (state a task left on this thread) never holds this task's rows back. */
    @Test
    void withoutOurSourceInTheSameTaskEachRowLeavesAsItComes() throws Exception {
        TaskChunks.sourceOpened(41); // left behind by task 41
        try (ScriptedHub hub = new ScriptedHub()) {
            SinkChannel c = openWithCredit(hub, options(), 42, TimeUnit.SECONDS.toNanos(60));
            addHanded(c, 0, 1); // no chunk end follows
            List<Frame> f = hub.await(fs -> rowsIn(fs) >= 1, "the row, without a chunk's end");
            assertEquals(List.of(0L), ids(ScriptedHub.ofType(f, Frames.PAYLOAD)));
            c.abort("the test is over");
        } finally {
            TaskChunks.sourceClosed();
        }
    }

    static long rowsIn(List<Frame> frames) {
        long n = 0;
        try {
            for (Frame p : ScriptedHub.ofType(frames, Frames.PAYLOAD)) if (p.has(Frames.FLAG_NEXT)) n += rows(p);
        } catch (Exception e) {
            throw new AssertionError("a payload the channel sent is not Arrow: " + e, e);
        }
        return n;
    }
}
