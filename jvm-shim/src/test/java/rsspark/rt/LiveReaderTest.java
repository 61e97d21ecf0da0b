package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

import rsspark.rsocket.ArrowPayloads;
import rsspark.rsocket.Frames;
import rsspark.rsocket.Metadata;
import rsspark.rsocket.PythonFixture;
import rsspark.rsocket.RemoteException;

/**
 * The long-running task's reader (LiveReader over EndpointFeed and StreamReader), over real sockets:
 * against the Python server (tests/realtime/fixture_server.py) for connect, stream, detach, resume
 * and the replay of a planned range; against a hostile server in this test for refused and malformed
 * frames.
 */
class LiveReaderTest {
    static final StructType SCHEMA = StructType.fromDDL("id BIGINT, t DOUBLE");

    static RtOptions options(String address, String... kv) {
        Map<String, String> m = RtOptionsTest.opts(kv);
        m.put("endpoint", address);
        return RtOptions.parse(m);
    }

    static List<Long> read(LiveReader r, int n) throws IOException {
        List<Long> out = new ArrayList<>();
        while (out.size() < n) {
            assertTrue(r.nextWithTimeout(30_000L).hasRecord(), "no row within 30 s after " + out);
            out.add(r.get().getLong(0));
        }
        return out;
    }

    static long position(LiveReader r) {
        return ((RtOffset.Partition) r.getOffset()).position();
    }

    @Test
    void aTaskStreamsRowsDetachesAndTheNextTaskResumesWhereSparkSaysEvenOnAFreshConnection() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "40")) {
            RtOptions o = options(py.address(), "maxInFlight", "8");
            String key = Metadata.newKey();
            LiveReader first = LiveReader.open(RtInputPartition.live(SCHEMA, o, RtOptions.SINGLE, key, "run", 0, -1, -1));
            assertEquals(JvmFeedTest.range(0, 20), read(first, 20));
            assertEquals(20, position(first));
            assertEquals(key, ((RtOffset.Partition) first.getOffset()).key());
            first.close(); // no TaskContext: not a stopping query, so the stream is detached, not cancelled
            // The batch's offset said 15 (say, the last rows were read after Spark took the offset).
            LiveReader second = LiveReader.open(RtInputPartition.live(SCHEMA, o, RtOptions.SINGLE, key, "run", 15, -1, 15));
            assertEquals(JvmFeedTest.range(15, 40), read(second, 25));
            assertEquals(40, position(second));
            assertFalse(second.nextWithTimeout(200L).hasRecord(), "a completed stream has no more rows");
            second.close();
            assertTrue(py.lines().stream().noneMatch(l -> l.equals("CANCELLED")), "a detached stream was cancelled");
        }
    }

    @Test
    void aPlannedRangeIsReadExactlyAndOneThePublisherCannotFillFailsSayingWhich() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "10")) {
            RtOptions o = options(py.address(), "pollTimeout", "100ms");
            String key = Metadata.newKey();
            LiveReader range = LiveReader.open(RtInputPartition.live(SCHEMA, o, RtOptions.SINGLE, key, "run", 0, 6, -1));
            List<Long> got = new ArrayList<>();
            while (range.next()) got.add(range.get().getLong(0));
            assertEquals(JvmFeedTest.range(0, 6), got);
            range.close();
            LiveReader past = LiveReader.open(RtInputPartition.live(SCHEMA, o, RtOptions.SINGLE, key, "run", 6, 20, 6));
            for (int i = 6; i < 10; i++) {
                assertTrue(past.next());
                assertEquals(i, past.get().getLong(0));
            }
            IOException e = assertThrows(IOException.class, past::next);
            assertTrue(e.getMessage().contains("completed at position 10, before the end of the planned range 6..20"),
                    e.getMessage());
            past.close();
        }
    }

    @Test
    void resumingAStreamTheServerNeverHadPastItsStartIsRefused() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "10")) {
            RtOptions o = options(py.address());
            RemoteException e = assertThrows(RemoteException.class,
                    () -> LiveReader.open(RtInputPartition.live(SCHEMA, o, RtOptions.SINGLE, Metadata.newKey(), "run", 5, -1, -1)));
            assertEquals(Frames.REJECTED_RESUME, e.code);
            assertTrue(e.getMessage().contains("cannot be resumed at position 5"), e.getMessage());
            assertFalse(e.getMessage().contains(o.endpoint(RtOptions.SINGLE).token), "the token leaked into " + e.getMessage());
        }
    }

    @Test
    void rowsOfAnotherSchemaFailTheTaskNamingTheColumns() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "10")) {
            Map<String, String> m = RtOptionsTest.opts("endpoint", py.address());
            RtOptions o = RtOptions.parse(m);
            LiveReader r = LiveReader.open(RtInputPartition.live(StructType.fromDDL("id BIGINT"), o, RtOptions.SINGLE,
                    Metadata.newKey(), "run", 0, -1, -1));
            IOException e = assertThrows(IOException.class, () -> r.nextWithTimeout(30_000L));
            assertTrue(e.getMessage().contains("sent rows with 2 columns [id, t]; the query's schema has 1 (id BIGINT)"),
                    e.getMessage());
            r.close();
        }
    }

    // -- a hostile server -----------------------------------------------------------------------
    /** Accepts one connection, drains what the client sends, and answers with {@code frames} (each length-prefixed unless raw). */
    static final class Hostile implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        final Thread thread;

        Hostile(byte[]... frames) throws IOException {
            thread = new Thread(() -> {
                try (Socket s = server.accept()) {
                    Thread drain = new Thread(() -> {
                        try {
                            DataInputStream in = new DataInputStream(s.getInputStream());
                            while (in.read() >= 0) { /* the client's frames: not answered */ }
                        } catch (IOException e) {
                            // closed
                        }
                    });
                    drain.setDaemon(true);
                    drain.start();
                    OutputStream out = s.getOutputStream();
                    for (byte[] f : frames) out.write(f);
                    out.flush();
                    drain.join(30_000);
                } catch (IOException | InterruptedException e) {
                    // the test closed the server
                }
            }, "hostile-server");
            thread.setDaemon(true);
            thread.start();
        }

        String address() {
            return "tcp://127.0.0.1:" + server.getLocalPort() + "/feed?token=SECRET";
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    static byte[] framed(byte[] frame) {
        byte[] out = new byte[frame.length + 3];
        out[0] = (byte) (frame.length >>> 16);
        out[1] = (byte) (frame.length >>> 8);
        out[2] = (byte) frame.length;
        System.arraycopy(frame, 0, out, 3, frame.length);
        return out;
    }

    static byte[] payload(boolean complete, byte[] data) {
        byte[] head = Frames.payloadHeader(1, true, complete);
        byte[] f = new byte[head.length + data.length];
        System.arraycopy(head, 0, f, 0, head.length);
        System.arraycopy(data, 0, f, head.length, data.length);
        return framed(f);
    }

    /** A valid Arrow payload of rows {@code ids} in the fixture's schema. */
    static byte[] rows(long... ids) {
        Schema s = new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true)),
                Field.nullable("t", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE))));
        try (RootAllocator a = new RootAllocator(); VectorSchemaRoot root = VectorSchemaRoot.create(s, a)) {
            BigIntVector id = (BigIntVector) root.getVector("id");
            Float8Vector t = (Float8Vector) root.getVector("t");
            for (int i = 0; i < ids.length; i++) {
                id.setSafe(i, ids[i]);
                t.setSafe(i, 0.5);
            }
            root.setRowCount(ids.length);
            return ArrowPayloads.encode(root);
        }
    }

    /**
     * What reading from a server that sends {@code frames} fails with: from opening the stream or
     * from reading it, whichever meets the frames first (the server sends them at once).
     */
    static IOException failure(byte[]... frames) throws Exception {
        try (Hostile h = new Hostile(frames)) {
            RtOptions o = options(h.address(), "resumable", "false", "maxInFlight", "2");
            AtomicReference<LiveReader> opened = new AtomicReference<>();
            IOException e = assertThrows(IOException.class, () -> {
                LiveReader r = LiveReader.open(RtInputPartition.live(SCHEMA, o, RtOptions.SINGLE, Metadata.newKey(), "run", 0, -1, -1));
                opened.set(r);
                while (true) r.nextWithTimeout(30_000L);
            });
            if (opened.get() != null) opened.get().close();
            assertFalse(e.getMessage().contains("SECRET"), "the token leaked into " + e.getMessage());
            return e;
        }
    }

    @Test
    void aFrameLongerThanTheLimitIsRefusedBeforeItsBodyIsRead() throws Exception {
        try (Hostile h = new Hostile(new byte[] {0, 0x10, 0, 0, 0, 0})) { // 4096 bytes announced, 3 sent
            RtOptions o = options(h.address(), "resumable", "false");
            rsspark.rsocket.StreamReader.Settings s = o.readerSettings();
            s.connection.maxFrameBytes = 1024;
            AtomicReference<rsspark.rsocket.StreamReader<Chunk>> opened = new AtomicReference<>();
            IOException e = assertThrows(IOException.class, () -> { // from open or poll: the frame comes at once
                opened.set(rsspark.rsocket.StreamReader.open(o.endpoint(RtOptions.SINGLE), s, new ArrowRows(SCHEMA, Feeds.allocator(),
                        "the test"), rsspark.rsocket.StreamReader.Mode.PLAIN, null, 0, 0));
                opened.get().poll(java.util.concurrent.TimeUnit.SECONDS.toNanos(30));
            });
            if (opened.get() != null) opened.get().detach();
            assertTrue(e.getMessage().contains("sent a malformed frame: frame length 4096 exceeds the limit of 1024 "
                    + "bytes (refused before reading its body)"), e.getMessage());
            assertFalse(e.getMessage().contains("SECRET"), "the token leaked into " + e.getMessage());
        }
    }

    @Test
    void aFrameShorterThanItsHeaderIsRefused() throws Exception {
        IOException e = failure(new byte[] {0, 0, 2, 0, 0});
        assertTrue(e.getMessage().contains("frame length 2 is shorter than the 6-byte frame header"), e.getMessage());
    }

    @Test
    void spec_1_1_moreRowsThanRequestedFailTheStream() throws Exception {
        IOException e = failure(payload(false, rows(0, 1, 2))); // maxInFlight is 2
        assertTrue(e.getMessage().contains("sent more than was requested: 3 rows against credits up to position 2 "
                + "(rule 1.1)"), e.getMessage());
    }

    @Test
    void aPayloadThatIsNotArrowFailsTheStream() throws Exception {
        IOException e = failure(payload(false, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9}));
        assertTrue(e.getMessage().contains("remote publisher tcp://127.0.0.1:"), e.getMessage());
    }

    @Test
    void aConnectionErrorEndsTheStreamWithTheServersText() throws Exception {
        IOException e = failure(payload(false, rows(0)), framed(Frames.error(0, Frames.CONNECTION_ERROR, "going away")));
        assertTrue(e.getMessage().contains("closed the connection with ERROR[CONNECTION_ERROR]: going away"),
                e.getMessage());
    }
}
