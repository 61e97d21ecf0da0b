package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

import rsspark.rsocket.Metadata;

/** A JVM publisher read in this JVM (JvmFeed): its bounds, positions, takeover, cancel and the rules it checks. */
class JvmFeedTest {
    static final StructType SCHEMA = StructType.fromDDL("value BIGINT");
    static final long WAIT = TimeUnit.SECONDS.toNanos(10);

    static RtOptions options(String id, String... kv) {
        Map<String, String> m = RtOptionsTest.opts(kv);
        m.put("jvmPublisher", "rsspark.rt.ProbePublisher#probe");
        m.put("publisher.id", id);
        return RtOptions.parse(m);
    }

    static List<Long> values(Chunk c) {
        assertNotNull(c, "no chunk");
        List<Long> out = new ArrayList<>();
        for (InternalRow r : c.rows()) out.add(r.getLong(0));
        return out;
    }

    static List<Long> range(long from, long to) {
        List<Long> out = new ArrayList<>();
        for (long i = from; i < to; i++) out.add(i);
        return out;
    }

    @Test
    void demandStaysWithinMaxInFlightBeyondTheReaderAndMaxBufferedRecordsBeyondTheCommit() throws Exception {
        String id = Metadata.newKey();
        RtOptions o = options(id, "maxInFlight", "4", "maxBufferedRecords", "10");
        JvmFeed f = JvmFeed.open(o, SCHEMA, Metadata.newKey(), "run", 0, 0);
        ProbePublisher p = ProbePublisher.BY_ID.get(id);
        assertEquals(4, p.requested.get(), "maxInFlight with nothing read");
        p.emit(0, 4);
        assertEquals(range(0, 4), values(f.poll(WAIT)));
        assertEquals(8, p.requested.get(), "4 taken: 4 more");
        p.emit(4, 4);
        assertEquals(range(4, 8), values(f.poll(WAIT)));
        assertEquals(10, p.requested.get(), "maxBufferedRecords: 10 rows kept until Spark commits");
        p.emit(8, 2);
        assertEquals(range(8, 10), values(f.poll(WAIT)));
        assertEquals(10, p.requested.get(), "nothing more while 10 rows are kept");
        f.acknowledge(6); // frees the chunk 0..4 only: 4..8 still holds row 6 and 7
        assertEquals(14, p.requested.get());
        f.cancel();
        assertTrue(p.cancelled);
    }

    @Test
    void aCancelledStreamReleasesEveryArrowBufferItTook() throws Exception {
        long before = rsspark.jvm.Memory.allocated();
        String id = Metadata.newKey();
        JvmFeed f = JvmFeed.open(options(id), SCHEMA, Metadata.newKey(), "run", 0, 0);
        ProbePublisher p = ProbePublisher.BY_ID.get(id);
        p.emit(0, 3);
        assertEquals(range(0, 3), values(f.poll(WAIT)));
        assertTrue(rsspark.jvm.Memory.allocated() > before, "the encoder holds the last batch it wrote");
        f.cancel();
        assertTrue(p.cancelled);
        assertEquals(before, rsspark.jvm.Memory.allocated(), "a cancelled stream's encoder released (it leaked 32-128 bytes)");
    }

    @Test
    void aRetriedTaskReplaysKeptRowsAndTheOlderReaderIsTakenOver() throws Exception {
        String id = Metadata.newKey();
        String key = Metadata.newKey();
        RtOptions o = options(id, "maxInFlight", "100");
        JvmFeed first = JvmFeed.open(o, SCHEMA, key, "run", 0, 0);
        ProbePublisher p = ProbePublisher.BY_ID.get(id);
        p.emit(0, 10);
        assertEquals(range(0, 10), values(first.poll(WAIT)));
        JvmFeed retry = JvmFeed.open(o, SCHEMA, key, "run", 4, 0);
        assertEquals(1, p.subscriptions, "the retry continued the subscription");
        assertEquals(range(4, 10), values(retry.poll(WAIT)));
        IOException e = assertThrows(IOException.class, () -> first.poll(WAIT));
        assertEquals("JVM publisher rsspark.rt.ProbePublisher#probe: a newer task of the query took over this stream",
                e.getMessage());
        retry.cancel();
    }

    @Test
    void aPositionThisJvmNoLongerKeepsIsRefusedSayingWhy() throws Exception {
        String id = Metadata.newKey();
        String key = Metadata.newKey();
        RtOptions o = options(id, "maxInFlight", "100");
        JvmFeed f = JvmFeed.open(o, SCHEMA, key, "run", 0, 0);
        ProbePublisher p = ProbePublisher.BY_ID.get(id);
        p.emit(0, 5);
        assertEquals(range(0, 5), values(f.poll(WAIT)));
        p.emit(5, 5);
        assertEquals(range(5, 10), values(f.poll(WAIT)));
        f.acknowledge(5);
        IOException e = assertThrows(IOException.class, () -> JvmFeed.open(o, SCHEMA, key, "run", 2, 0));
        assertTrue(e.getMessage().contains("keeps rows 5..10 in this JVM; Spark asks for position 2"), e.getMessage());
        assertTrue(e.getMessage().contains("start the query from a new checkpointLocation"), e.getMessage());
        IOException ahead = assertThrows(IOException.class, () -> JvmFeed.open(o, SCHEMA, key, "run", 11, 0));
        assertTrue(ahead.getMessage().contains("Spark asks for position 11"), ahead.getMessage());
        f.cancel();
    }

    @Test
    void spec_1_1_morePushedThanRequestedFailsTheFeedNamingTheRule() throws Exception {
        String id = Metadata.newKey();
        JvmFeed f = JvmFeed.open(options(id, "maxInFlight", "2"), SCHEMA, Metadata.newKey(), "run", 0, 0);
        ProbePublisher.BY_ID.get(id).emit(0, 3);
        IOException e = assertThrows(IOException.class, () -> {
            while (true) f.poll(WAIT);
        });
        assertTrue(e.getMessage().contains("sent more elements than were requested: element 2 against demand up to 2 "
                + "(rule 1.1)"), e.getMessage());
        f.cancel();
    }

    @Test
    void spec_2_13_aNullElementFailsTheFeedNamingTheRule() throws Exception {
        String id = Metadata.newKey();
        JvmFeed f = JvmFeed.open(options(id), SCHEMA, Metadata.newKey(), "run", 0, 0);
        ProbePublisher.BY_ID.get(id).next(null);
        IOException e = assertThrows(IOException.class, () -> f.poll(WAIT));
        assertTrue(e.getMessage().contains("signalled a null element (rule 2.13)"), e.getMessage());
        f.cancel();
    }

    @Test
    void aCompletedPublisherEndsTheFeedOnceEveryRowWasTaken() throws Exception {
        String id = Metadata.newKey();
        JvmFeed f = JvmFeed.open(options(id), SCHEMA, Metadata.newKey(), "run", 0, 0);
        ProbePublisher p = ProbePublisher.BY_ID.get(id);
        p.emit(0, 3);
        p.complete();
        assertFalse(f.isComplete(), "rows not taken yet");
        assertEquals(range(0, 3), values(f.poll(WAIT)));
        assertNull(f.poll(WAIT));
        assertTrue(f.isComplete());
        f.detach();
    }

    @Test
    void aStreamCancelledByAQueryRunStaysCancelledForThatRunOnly() throws Exception {
        String id = Metadata.newKey();
        String key = Metadata.newKey();
        RtOptions o = options(id);
        JvmFeed f = JvmFeed.open(o, SCHEMA, key, "run-1", 0, 0);
        ProbePublisher first = ProbePublisher.BY_ID.get(id);
        f.detach(); // between two batches
        JvmFeed.cancelIfPresent(key, "run-1"); // the query stops
        assertTrue(first.cancelled);
        IOException e = assertThrows(IOException.class, () -> JvmFeed.open(o, SCHEMA, key, "run-1", 0, 0));
        assertTrue(e.getMessage().endsWith("was cancelled: the query is stopping"), e.getMessage());
        JvmFeed again = JvmFeed.open(o, SCHEMA, key, "run-2", 0, 0); // a restarted query subscribes anew
        ProbePublisher second = ProbePublisher.BY_ID.get(id);
        assertNotSame(first, second);
        assertFalse(second.cancelled);
        again.cancel();
        assertTrue(second.cancelled);
    }
}
