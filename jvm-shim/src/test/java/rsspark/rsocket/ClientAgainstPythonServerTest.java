package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The Java RSocket client against the Python rs_spark.net server (tests/realtime/fixture_server.py). */
class ClientAgainstPythonServerTest {
    private static final BufferAllocator ALLOC = new RootAllocator();

    /** Decodes a payload's {@code id} column. */
    static final StreamReader.PayloadDecoder<long[]> IDS = new StreamReader.PayloadDecoder<>() {
        @Override
        public long[] decode(byte[] buf, int off, int len) throws ProtocolException {
            try (VectorSchemaRoot root = ArrowPayloads.decode(buf, off, len, ALLOC, "the fixture")) {
                BigIntVector v = (BigIntVector) root.getVector("id");
                long[] out = new long[root.getRowCount()];
                for (int i = 0; i < out.length; i++) out[i] = v.get(i);
                return out;
            }
        }

        @Override
        public int rows(long[] item) {
            return item.length;
        }
    };

    @AfterAll
    static void allMemoryFreed() {
        assertEquals(0, ALLOC.getAllocatedMemory());
    }

    static StreamReader.Settings settings(int maxInFlight) {
        StreamReader.Settings s = new StreamReader.Settings();
        s.maxInFlight = maxInFlight;
        return s;
    }

    static List<Long> take(StreamReader<long[]> r, int rows) throws IOException {
        List<Long> out = new ArrayList<>();
        while (out.size() < rows) {
            long[] ids = r.poll(TimeUnit.SECONDS.toNanos(30));
            assertNotNull(ids, "no row within 30 s after " + out.size());
            for (long id : ids) out.add(id);
        }
        return out;
    }

    static List<Long> range(long from, long to) {
        List<Long> out = new ArrayList<>();
        for (long i = from; i < to; i++) out.add(i);
        return out;
    }

    @Test
    void readsEveryRowInOrderThenCompletes() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "50")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            StreamReader<long[]> r = StreamReader.open(ep, settings(8), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0);
            assertEquals(range(0, 50), take(r, 50));
            assertNull(r.poll(TimeUnit.SECONDS.toNanos(30)));
            assertTrue(r.isComplete());
            r.detach();
        }
    }

    @Test
    void spec_1_1_atMostMaxInFlightRowsAreRequestedBeyondWhatWasTaken() throws Exception {
        try (PythonFixture py = new PythonFixture("endless")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            StreamReader<long[]> r = StreamReader.open(ep, settings(8), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0);
            py.await(l -> l.equals("EMITTED 8"), "8 rows emitted");
            assertTrue(py.last("REQUESTED") <= 8, "requested " + py.last("REQUESTED") + " with nothing taken: " + py.lines());
            assertEquals(8, r.outstanding());
            assertEquals(range(0, 4), take(r, 4)); // half the window free: 4 more credits
            py.await(l -> l.equals("EMITTED 12"), "12 rows emitted after 4 were taken");
            assertTrue(py.last("REQUESTED") <= 12, "requested " + py.last("REQUESTED") + " with 4 taken");
            assertEquals(range(4, 12), take(r, 8));
            r.cancel();
            py.await(l -> l.equals("CANCELLED"), "the publisher cancelled");
        }
    }

    @Test
    void aDetachedStreamResumesAtAPositionOnANewConnection() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "100")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            String key = Metadata.newKey();
            StreamReader<long[]> first = StreamReader.open(ep, settings(16), IDS, StreamReader.Mode.RESUMABLE, key, 0, 0);
            assertEquals(range(0, 30), take(first, 30));
            first.detach(); // no CANCEL: the server keeps the stream for its reader
            // A new reader (another process, after a crash) continues at the position Spark committed.
            StreamReader<long[]> second = StreamReader.open(ep, settings(16), IDS, StreamReader.Mode.RESUMABLE, key, 20, 20);
            assertEquals(range(20, 100), take(second, 80));
            second.detach();
            assertTrue(py.lines().stream().noneMatch(l -> l.equals("CANCELLED")), "a detached stream was cancelled");
        }
    }

    @Test
    void aStreamWaitingForItsReaderIsCancelledWithoutSubscribingAnything() throws Exception {
        try (PythonFixture py = new PythonFixture("endless")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            assertFalse(StreamReader.cancelRemote(ep, settings(8), Metadata.newKey(), 0), "an unknown stream was cancelled");
            assertTrue(py.lines().stream().noneMatch(l -> l.startsWith("REQUESTED")), "the publisher was subscribed: " + py.lines());
            String key = Metadata.newKey();
            StreamReader<long[]> r = StreamReader.open(ep, settings(8), IDS, StreamReader.Mode.RESUMABLE, key, 0, 0);
            assertEquals(range(0, 10), take(r, 10));
            r.detach(); // the query stopped between two batches: the stream waits for the next task
            assertTrue(StreamReader.cancelRemote(ep, settings(8), key, 10));
            py.await(l -> l.equals("CANCELLED"), "the publisher cancelled");
        }
    }

    @Test
    void resumingAStreamTheServerDoesNotKeepPastItsStartIsRefusedSayingWhatToDo() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "10")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            RemoteException e = assertThrows(RemoteException.class, () ->
                    StreamReader.open(ep, settings(8), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 5, 0));
            assertEquals(Frames.REJECTED_RESUME, e.code);
            assertTrue(e.getMessage().contains("cannot be resumed at position 5"), e.getMessage());
            assertTrue(e.getMessage().contains("new checkpointLocation"), e.getMessage());
        }
    }

    @Test
    void thePublishersErrorEndsTheStreamWithItsMessage() throws Exception {
        try (PythonFixture py = new PythonFixture("failing", "5", "kaput")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            StreamReader<long[]> r = StreamReader.open(ep, settings(8), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0);
            assertEquals(range(0, 5), take(r, 5));
            IOException e = assertThrows(IOException.class, () -> r.poll(TimeUnit.SECONDS.toNanos(30)));
            assertTrue(e.getMessage().contains("kaput at row 5"), e.getMessage());
            assertTrue(e.getMessage().contains("after 5 rows"), e.getMessage());
            r.detach();
        }
    }

    @Test
    void aWrongTokenIsRefusedAndTheErrorSaysSo() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "10")) {
            Endpoint ep = Endpoint.parse(py.address(), "not-the-token");
            IOException e = assertThrows(IOException.class, () -> {
                StreamReader<long[]> r = StreamReader.open(ep, settings(8), IDS, StreamReader.Mode.PLAIN, null, 0, 0);
                r.poll(TimeUnit.SECONDS.toNanos(30));
            });
            assertTrue(e.getMessage().contains("wrong token"), e.getMessage());
            assertFalse(e.getMessage().contains("not-the-token"), "the token leaked into " + e.getMessage());
        }
    }

    @Test
    void aChannelDeliversTaggedRowsIntoTheSinkHubWithinItsCreditsAndGetsTheAcknowledgement() throws Exception {
        try (PythonFixture py = new PythonFixture("sink")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            ChannelWriter w = ChannelWriter.open(ep, new Connection.Options(), 16);
            long credit = w.awaitCredit(TimeUnit.SECONDS.toNanos(30));
            assertTrue(credit >= 3, "credit " + credit);
            w.send(tagged(0, 0, 0, 1, 2), 3);
            w.send(tagged(0, 3, 3, 4), 2);
            w.complete();
            List<byte[]> answers = w.awaitAnswers(TimeUnit.SECONDS.toNanos(30));
            assertEquals(1, answers.size());
            try (VectorSchemaRoot ack = ArrowPayloads.decode(answers.get(0), 0, answers.get(0).length, ALLOC, "the hub")) {
                assertEquals("delivered", ack.getVector("status").getObject(0).toString());
                assertEquals(5L, ((BigIntVector) ack.getVector("delivered")).get(0));
            }
            w.close();
            for (int i = 0; i < 5; i++) {
                String row = "ROW " + i;
                py.await(l -> l.equals(row), row);
            }
        }
    }

    /** One open-ended epoch's rows {@code ids}, starting at row {@code start} of the epoch (the sink's tags). */
    static byte[] tagged(long epoch, long start, long... ids) {
        Map<String, String> meta = new HashMap<>();
        meta.put("rs_spark.batch_id", Long.toString(epoch));
        meta.put("rs_spark.start_row", Long.toString(start));
        meta.put("rs_spark.batch_rows", Long.toString(start + ids.length));
        meta.put("rs_spark.open_ended", "1");
        Schema s = new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true))), meta);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(s, ALLOC)) {
            BigIntVector v = (BigIntVector) root.getVector(0);
            v.allocateNew(ids.length);
            for (int i = 0; i < ids.length; i++) v.set(i, ids[i]);
            root.setRowCount(ids.length);
            return ArrowPayloads.encode(root);
        }
    }
}
