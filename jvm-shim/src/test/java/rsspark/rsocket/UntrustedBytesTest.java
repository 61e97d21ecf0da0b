package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Every byte from the server is checked before use: frames (layout, lengths) and Arrow payloads. */
class UntrustedBytesTest {
    private static final BufferAllocator ALLOC = new RootAllocator();

    @AfterAll
    static void nothingLeaks() {
        assertEquals(0, ALLOC.getAllocatedMemory());
    }

    private static byte[] longs(long... values) {
        Schema s = new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true))));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(s, ALLOC)) {
            BigIntVector v = (BigIntVector) root.getVector(0);
            v.allocateNew(values.length);
            for (int i = 0; i < values.length; i++) v.set(i, values[i]);
            root.setRowCount(values.length);
            return ArrowPayloads.encode(root);
        }
    }

    private static String decodeError(byte[] b) {
        ProtocolException e = assertThrows(ProtocolException.class, () -> ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer").close());
        return e.getMessage();
    }

    @Test
    void aValidPayloadRoundTrips() throws Exception {
        byte[] b = longs(1, 2, 3);
        try (VectorSchemaRoot r = ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer")) {
            assertEquals(3, r.getRowCount());
            assertEquals(3L, ((BigIntVector) r.getVector(0)).get(2));
        }
    }

    @Test
    void aTruncatedPayloadIsRefused() {
        byte[] b = longs(1, 2, 3);
        for (int cut : new int[] {3, 7, b.length / 2, b.length - 9}) {
            String m = decodeError(Arrays.copyOf(b, cut));
            assertTrue(m.startsWith("malformed Arrow payload from peer"), m);
        }
    }

    @Test
    void aMetadataLengthBeyondThePayloadIsRefusedBeforeAnythingIsAllocated() {
        byte[] b = longs(1);
        ByteBuffer.wrap(b, 4, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(Integer.MAX_VALUE - 8);
        assertTrue(decodeError(b).contains("bytes of metadata with"), decodeError(b));
    }

    @Test
    void aCompressedBodyIsRefused() throws Exception {
        Schema s = new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true))));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(s, ALLOC)) {
            BigIntVector v = (BigIntVector) root.getVector(0);
            v.allocateNew(100);
            for (int i = 0; i < 100; i++) v.set(i, 7);
            root.setRowCount(100);
            try (ArrowStreamWriter w = new ArrowStreamWriter(root, null, Channels.newChannel(out), IpcOption.DEFAULT,
                    CommonsCompressionFactory.INSTANCE, CompressionUtil.CodecType.LZ4_FRAME)) {
                w.start();
                w.writeBatch();
                w.end();
            }
        }
        assertTrue(decodeError(out.toByteArray()).contains("compressed body"), decodeError(out.toByteArray()));
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) if (haystack[i + j] != needle[j]) continue outer;
            return i;
        }
        return -1;
    }

    @Test
    void offsetsPointingOutsideTheirDataAreRefused() throws Exception {
        Schema s = new Schema(List.of(Field.nullable("s", ArrowType.Utf8.INSTANCE)));
        byte[] b;
        try (VectorSchemaRoot root = VectorSchemaRoot.create(s, ALLOC)) {
            VarCharVector v = (VarCharVector) root.getVector(0);
            v.allocateNew(3);
            for (int i = 0; i < 3; i++) v.setSafe(i, ("v" + i).getBytes(StandardCharsets.UTF_8));
            v.setValueCount(3);
            root.setRowCount(3);
            b = ArrowPayloads.encode(root);
        }
        // The last offset 4 KiB past 6 bytes of data, in the bytes on the wire. (Not set in the vector
        // before encoding: the encoder would then send 4 KiB of data whenever the allocator's buffer
        // happens to be that large, and the payload would be valid.)
        byte[] offsets = {0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0};
        int at = indexOf(b, offsets);
        assertTrue(at >= 0, "the offsets 0, 2, 4, 6 are not in the encoded payload");
        assertEquals(-1, indexOf(java.util.Arrays.copyOfRange(b, at + 1, b.length), offsets), "the offsets twice");
        b[at + 12] = 0;
        b[at + 13] = 0x10; // 4096, little-endian
        String m = decodeError(b);
        assertTrue(m.contains("does not match its schema's layout") || m.contains("unreadable"), m);
    }

    @Test
    void framesAreCheckedBeforeTheirFieldsAreUsed() {
        assertThrows(ProtocolException.class, () -> Frames.decode(new byte[5], 5));
        byte[] reqN = Frames.requestN(1, 1);
        reqN[9] = 0; // n = 0
        ProtocolException zero = assertThrows(ProtocolException.class, () -> Frames.decode(reqN, reqN.length));
        assertTrue(zero.getMessage().contains("rule 3.9"), zero.getMessage());
        byte[] payload = Frames.payloadHeader(1, true, false);
        payload[4] |= (byte) (Frames.FLAG_METADATA >> 8); // metadata flag, but no metadata length follows
        assertThrows(ProtocolException.class, () -> Frames.decode(payload, payload.length));
        byte[] onStream0 = Frames.payloadHeader(1, true, false);
        onStream0[3] = 0; // PAYLOAD on stream 0
        assertThrows(ProtocolException.class, () -> Frames.decode(onStream0, onStream0.length));
        byte[] badText = Frames.error(1, Frames.APPLICATION_ERROR, "x");
        badText[badText.length - 1] = (byte) 0xFF; // not UTF-8
        assertThrows(ProtocolException.class, () -> Frames.decode(badText, badText.length));
    }

    @Test
    void theResumeTokenIsTheHmacThePythonServerExpects() {
        // rs_spark.net.resume.resume_token(token, "0" * 32).hex(), computed with Python's hmac module.
        assertEquals("cb9c2a1c4eacd98b1f81718a1382ec71099af315450a43f2b3333de7af18bf8e", hex(Metadata.resumeToken("tok", "0".repeat(32))));
        assertEquals("c6cc4d11e4593c9059eec6ad4316599861d3d01b0936d4a889242e6f2842294e", hex(Metadata.resumeToken(null, "0".repeat(32))));
    }

    private static String hex(byte[] b) {
        StringBuilder out = new StringBuilder();
        for (byte x : b) out.append(String.format("%02x", x));
        return out.toString();
    }
}
