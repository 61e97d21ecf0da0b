package rsspark.rsocket;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;

import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The Arrow codec of rs_spark.net (rs_spark/net/protocol/codecs.py): each payload is a whole Arrow IPC
 * stream holding one record batch (schema, batch, end-of-stream), and REQUEST_N counts its rows.
 *
 * <p>Bytes from a peer are hostile until validated ({@link #decode}): every message length is
 * checked against the bytes actually there before anything is allocated, compressed bodies and
 * dictionary batches are refused, and the loaded vectors are validated in full (offsets, validity,
 * sizes) before a single value is read.
 */
public final class ArrowPayloads {
    private ArrowPayloads() {}

    private static final int CONTINUATION = 0xFFFFFFFF;

    /**
     * Decode one payload into a new {@link VectorSchemaRoot} (the caller closes it), or throw
     * {@link ProtocolException} saying what is malformed. {@code what} names the peer in errors.
     */
    public static VectorSchemaRoot decode(byte[] buf, int off, int len, BufferAllocator allocator, String what)
            throws ProtocolException {
        try (ReadChannel ch = new ReadChannel(Channels.newChannel(new ByteArrayInputStream(buf, off, len)))) {
            MessageMetadataResult first = next(ch, buf, off, len, what);
            if (first == null || first.headerType() != MessageHeader.Schema) {
                throw malformed(what, "the payload does not start with an Arrow schema message");
            }
            Schema schema = MessageSerializer.deserializeSchema(first);
            MessageMetadataResult msg = next(ch, buf, off, len, what);
            if (msg == null) throw malformed(what, "the payload carries a schema but no record batch");
            if (msg.headerType() == MessageHeader.DictionaryBatch) {
                throw malformed(what, "the payload carries a dictionary batch; the JVM reader takes plain "
                        + "(not dictionary-encoded) columns: decode dictionaries before publishing");
            }
            if (msg.headerType() != MessageHeader.RecordBatch) {
                throw malformed(what, "the payload's second message is not a record batch");
            }
            VectorSchemaRoot root = load(ch, msg, schema, len, allocator, what);
            try {
                if (next(ch, buf, off, len, what) != null) {
                    throw malformed(what, "the payload carries more than one record batch");
                }
                return root;
            } catch (ProtocolException | RuntimeException e) {
                root.close();
                throw e;
            }
        } catch (ProtocolException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            // Arrow's readers throw assorted runtime exceptions on bytes they cannot parse.
            throw malformed(what, "unreadable Arrow IPC: " + e);
        }
    }

    /** The next message's metadata, or null at end-of-stream / end of the bytes; lengths checked first. */
    private static MessageMetadataResult next(ReadChannel ch, byte[] buf, int off, int len, String what)
            throws IOException {
        int at = (int) ch.bytesRead();
        int left = len - at;
        if (left == 0) return null;
        if (left < 4) throw malformed(what, "truncated Arrow message at byte " + at);
        ByteBuffer head = ByteBuffer.wrap(buf, off + at, left).order(ByteOrder.LITTLE_ENDIAN);
        int prefix = head.getInt();
        int metaLen = prefix;
        int headLen = 4;
        if (prefix == CONTINUATION) {
            if (left < 8) throw malformed(what, "truncated Arrow message at byte " + at);
            metaLen = head.getInt();
            headLen = 8;
        }
        if (metaLen == 0) return null; // end-of-stream marker
        if (metaLen < 0 || metaLen > left - headLen) {
            throw malformed(what, "an Arrow message declares " + metaLen + " bytes of metadata with "
                    + (left - headLen) + " bytes left");
        }
        MessageMetadataResult r = MessageSerializer.readMessage(ch);
        if (r == null) return null;
        long body = r.getMessageBodyLength();
        long remaining = len - ch.bytesRead();
        if (body < 0 || body > remaining) {
            throw malformed(what, "an Arrow message declares a body of " + body + " bytes with " + remaining + " left");
        }
        if (r.headerType() == MessageHeader.Schema && body != 0) throw malformed(what, "a schema message has a body");
        return r;
    }

    private static VectorSchemaRoot load(ReadChannel ch, MessageMetadataResult msg, Schema schema, int len,
            BufferAllocator allocator, String what) throws IOException {
        ArrowBuf body = MessageSerializer.readMessageBody(ch, msg.getMessageBodyLength(), allocator);
        ArrowRecordBatch parsed;
        try {
            parsed = MessageSerializer.deserializeRecordBatch(msg, body); // takes over (releases) body
        } catch (IOException | RuntimeException e) {
            if (body.refCnt() > 0) body.close();
            throw e;
        }
        try (ArrowRecordBatch batch = parsed) {
            if (batch.getBodyCompression().getCodec() != CompressionUtil.CodecType.NO_COMPRESSION.getType()) {
                throw malformed(what, "the record batch has a compressed body; rs_spark accepts uncompressed Arrow "
                        + "only (a compressed body can expand without bound)");
            }
            if (batch.getLength() < 0) throw malformed(what, "the record batch has a negative length");
            VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
            try {
                new VectorLoader(root).load(batch);
                for (FieldVector v : root.getFieldVectors()) ArrowValidation.validateFull(v);
                return root;
            } catch (RuntimeException e) {
                root.close();
                throw malformed(what, "the record batch does not match its schema's layout: " + e.getMessage());
            }
        }
    }

    private static ProtocolException malformed(String what, String why) {
        return new ProtocolException("malformed Arrow payload from " + what + ": " + why);
    }

    /** {@code root} as one payload: schema (with its metadata), the batch, end-of-stream. */
    public static byte[] encode(VectorSchemaRoot root) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256 + 16 * root.getRowCount());
        try (ArrowStreamWriter w = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
            w.start();
            w.writeBatch();
            w.end();
        } catch (IOException e) {
            throw new IllegalStateException("writing an Arrow IPC stream to memory failed", e);
        }
        return out.toByteArray();
    }
}
