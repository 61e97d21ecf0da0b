package rsspark.rsocket;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * RSocket 1.0 frames as rs_spark.net speaks them (rs_spark/net/protocol/frames.py): encoders return the
 * frame without its 3-byte length prefix ({@link Connection} adds it); {@link #decode} checks the
 * layout of every frame before any field is used and throws {@link ProtocolException} naming what
 * is wrong.
 */
public final class Frames {
    private Frames() {}

    public static final int SETUP = 0x01;
    public static final int LEASE = 0x02;
    public static final int KEEPALIVE = 0x03;
    public static final int REQUEST_RESPONSE = 0x04;
    public static final int REQUEST_FNF = 0x05;
    public static final int REQUEST_STREAM = 0x06;
    public static final int REQUEST_CHANNEL = 0x07;
    public static final int REQUEST_N = 0x08;
    public static final int CANCEL = 0x09;
    public static final int PAYLOAD = 0x0A;
    public static final int ERROR = 0x0B;
    public static final int METADATA_PUSH = 0x0C;
    public static final int RESUME = 0x0D;
    public static final int RESUME_OK = 0x0E;
    public static final int EXT = 0x3F;

    public static final int FLAG_IGNORE = 0x200;
    public static final int FLAG_METADATA = 0x100;
    public static final int FLAG_FOLLOWS = 0x80;
    public static final int FLAG_RESUME = 0x80; // SETUP
    public static final int FLAG_RESPOND = 0x80; // KEEPALIVE
    public static final int FLAG_COMPLETE = 0x40;
    public static final int FLAG_NEXT = 0x20;

    public static final int INVALID_SETUP = 0x001;
    public static final int UNSUPPORTED_SETUP = 0x002;
    public static final int REJECTED_SETUP = 0x003;
    public static final int REJECTED_RESUME = 0x004;
    public static final int CONNECTION_ERROR = 0x101;
    public static final int CONNECTION_CLOSE = 0x102;
    public static final int APPLICATION_ERROR = 0x201;
    public static final int REJECTED = 0x202;
    public static final int CANCELED = 0x203;
    public static final int INVALID = 0x204;

    /** REQUEST_N carries 31 bits. */
    public static final long MAX_REQUEST_N = 0x7FFFFFFFL;
    /** The 24-bit length prefix bounds every frame. */
    public static final int MAX_FRAME_LENGTH = 0xFFFFFF;
    private static final int HEADER = 6;

    public static String typeName(int type) {
        switch (type) {
            case SETUP: return "SETUP";
            case LEASE: return "LEASE";
            case KEEPALIVE: return "KEEPALIVE";
            case REQUEST_RESPONSE: return "REQUEST_RESPONSE";
            case REQUEST_FNF: return "REQUEST_FNF";
            case REQUEST_STREAM: return "REQUEST_STREAM";
            case REQUEST_CHANNEL: return "REQUEST_CHANNEL";
            case REQUEST_N: return "REQUEST_N";
            case CANCEL: return "CANCEL";
            case PAYLOAD: return "PAYLOAD";
            case ERROR: return "ERROR";
            case METADATA_PUSH: return "METADATA_PUSH";
            case RESUME: return "RESUME";
            case RESUME_OK: return "RESUME_OK";
            case EXT: return "EXT";
            default: return String.format("type 0x%02x", type);
        }
    }

    public static String errorName(int code) {
        switch (code) {
            case INVALID_SETUP: return "INVALID_SETUP";
            case UNSUPPORTED_SETUP: return "UNSUPPORTED_SETUP";
            case REJECTED_SETUP: return "REJECTED_SETUP";
            case REJECTED_RESUME: return "REJECTED_RESUME";
            case CONNECTION_ERROR: return "CONNECTION_ERROR";
            case CONNECTION_CLOSE: return "CONNECTION_CLOSE";
            case APPLICATION_ERROR: return "APPLICATION_ERROR";
            case REJECTED: return "REJECTED";
            case CANCELED: return "CANCELED";
            case INVALID: return "INVALID";
            default: return String.format("0x%x", code);
        }
    }

    // -- encoding ---------------------------------------------------------------------------------
    private static ByteBuffer header(int size, int streamId, int type, int flags) {
        ByteBuffer b = ByteBuffer.allocate(size);
        b.putInt(streamId);
        b.putShort((short) ((type << 10) | flags));
        return b;
    }

    private static void putMetadata(ByteBuffer b, byte[] metadata) {
        if (metadata == null) return;
        put24(b, metadata.length);
        b.put(metadata);
    }

    private static int metaSize(byte[] metadata) {
        if (metadata == null) return 0;
        if (metadata.length > MAX_FRAME_LENGTH) {
            throw new IllegalArgumentException("metadata of " + metadata.length + " bytes exceeds the 24-bit limit");
        }
        return 3 + metadata.length;
    }

    private static int metaFlag(byte[] metadata) {
        return metadata == null ? 0 : FLAG_METADATA;
    }

    static void put24(ByteBuffer b, int v) {
        b.put((byte) (v >>> 16)).put((byte) (v >>> 8)).put((byte) v);
    }

    /** SETUP (version 1.0); with {@code resumeToken} the resume flag is set and the token sent. */
    public static byte[] setup(int keepaliveMs, int lifetimeMs, String metadataMime, String dataMime,
            byte[] metadata, byte[] resumeToken) {
        byte[] mm = metadataMime.getBytes(StandardCharsets.US_ASCII);
        byte[] dm = dataMime.getBytes(StandardCharsets.US_ASCII);
        if (mm.length > 255 || dm.length > 255) throw new IllegalArgumentException("a MIME type is at most 255 bytes");
        int tokenSize = resumeToken == null ? 0 : 2 + resumeToken.length;
        if (resumeToken != null && (resumeToken.length < 1 || resumeToken.length > 0xFFFF)) {
            throw new IllegalArgumentException("a resume token is 1..65535 bytes, got " + resumeToken.length);
        }
        int flags = metaFlag(metadata) | (resumeToken != null ? FLAG_RESUME : 0);
        ByteBuffer b = header(HEADER + 12 + tokenSize + 2 + mm.length + dm.length + metaSize(metadata), 0, SETUP, flags);
        b.putShort((short) 1).putShort((short) 0).putInt(keepaliveMs).putInt(lifetimeMs);
        if (resumeToken != null) {
            b.putShort((short) resumeToken.length).put(resumeToken);
        }
        b.put((byte) mm.length).put(mm).put((byte) dm.length).put(dm);
        putMetadata(b, metadata);
        return b.array();
    }

    /** REQUEST_STREAM or REQUEST_CHANNEL with initial request {@code n} and no data. */
    public static byte[] request(int type, int streamId, long n, byte[] metadata) {
        checkN(n, typeName(type));
        ByteBuffer b = header(HEADER + 4 + metaSize(metadata), streamId, type, metaFlag(metadata));
        b.putInt((int) n);
        putMetadata(b, metadata);
        return b.array();
    }

    public static byte[] requestN(int streamId, long n) {
        checkN(n, "REQUEST_N");
        ByteBuffer b = header(HEADER + 4, streamId, REQUEST_N, 0);
        b.putInt((int) n);
        return b.array();
    }

    private static void checkN(long n, String what) {
        if (n < 1 || n > MAX_REQUEST_N) {
            throw new IllegalArgumentException(what + ": n=" + n + " must be within 1.." + MAX_REQUEST_N);
        }
    }

    public static byte[] cancel(int streamId) {
        return header(HEADER, streamId, CANCEL, 0).array();
    }

    /** A PAYLOAD frame's header; its data follows (see {@link Connection#send(byte[], byte[], int, int)}). */
    public static byte[] payloadHeader(int streamId, boolean next, boolean complete) {
        return header(HEADER, streamId, PAYLOAD, (next ? FLAG_NEXT : 0) | (complete ? FLAG_COMPLETE : 0)).array();
    }

    public static byte[] error(int streamId, int code, String message) {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(text.length, 65536); // error text is for people: keep it bounded
        ByteBuffer b = header(HEADER + 4 + n, streamId, ERROR, 0);
        b.putInt(code).put(text, 0, n);
        return b.array();
    }

    public static byte[] keepalive(boolean respond, byte[] data) {
        ByteBuffer b = header(HEADER + 8 + data.length, 0, KEEPALIVE, respond ? FLAG_RESPOND : 0);
        b.putLong(0L).put(data);
        return b.array();
    }

    public static byte[] metadataPush(byte[] metadata) {
        ByteBuffer b = header(HEADER + metadata.length, 0, METADATA_PUSH, FLAG_METADATA);
        b.put(metadata);
        return b.array();
    }

    /** RESUME (version 1.0): the token, the position to continue from (rows, rs_spark's convention) and 0. */
    public static byte[] resume(byte[] token, long position) {
        if (token.length < 1 || token.length > 0xFFFF) {
            throw new IllegalArgumentException("a resume token is 1..65535 bytes, got " + token.length);
        }
        if (position < 0) throw new IllegalArgumentException("a position is >= 0, got " + position);
        ByteBuffer b = header(HEADER + 6 + token.length + 16, 0, RESUME, 0);
        b.putShort((short) 1).putShort((short) 0).putShort((short) token.length).put(token);
        b.putLong(position).putLong(0L);
        return b.array();
    }

    // -- decoding ---------------------------------------------------------------------------------
    /** Decode {@code buf[0, len)}, one frame without its length prefix. */
    public static Frame decode(byte[] buf, int len) throws ProtocolException {
        if (len < HEADER) throw new ProtocolException("frame of " + len + " bytes is shorter than the 6-byte header");
        ByteBuffer b = ByteBuffer.wrap(buf, 0, len);
        int sid = b.getInt();
        if (sid < 0) throw new ProtocolException("stream id has its reserved top bit set");
        int tf = b.getShort() & 0xFFFF;
        int type = tf >>> 10;
        int flags = tf & 0x3FF;
        checkStreamId(sid, type);
        switch (type) {
            case PAYLOAD:
                return withPayload(buf, len, HEADER, sid, type, flags, 0, 0, 0);
            case REQUEST_N:
            case REQUEST_STREAM:
            case REQUEST_CHANNEL:
                return request(b, buf, len, sid, type, flags);
            case CANCEL:
                if (len != HEADER) throw new ProtocolException("CANCEL frame is " + len + " bytes; it must be 6");
                return new Frame(sid, type, flags, null, buf, len, 0, 0, 0, 0);
            case ERROR:
                return error(b, buf, len, sid, flags);
            case KEEPALIVE:
                if (len < 14) throw new ProtocolException("KEEPALIVE frame is shorter than 14 bytes");
                return new Frame(sid, type, flags, null, buf, 14, len - 14, 0, 0, 0);
            case METADATA_PUSH:
                return new Frame(sid, type, flags, java.util.Arrays.copyOfRange(buf, HEADER, len), buf, len, 0, 0, 0, 0);
            case RESUME_OK:
                return resumeOk(b, buf, len, sid, flags);
            case SETUP:
            case LEASE:
            case RESUME:
            case EXT:
            case REQUEST_RESPONSE:
            case REQUEST_FNF:
                // A client reads none of these (a server never sends SETUP or RESUME); their bodies are not read.
                return new Frame(sid, type, flags, null, buf, len, 0, 0, 0, 0);
            default:
                if ((flags & FLAG_IGNORE) == 0) {
                    throw new ProtocolException(String.format("unknown frame type 0x%02x without the IGNORE flag", type));
                }
                return new Frame(sid, type, flags, null, buf, len, 0, 0, 0, 0);
        }
    }

    /** REQUEST_N (exactly 10 bytes), REQUEST_STREAM / REQUEST_CHANNEL (n, then metadata and data): n > 0 (rule 3.9). */
    private static Frame request(ByteBuffer b, byte[] buf, int len, int sid, int type, int flags) throws ProtocolException {
        if (type == REQUEST_N && len != 10) {
            throw new ProtocolException("REQUEST_N frame on stream " + sid + " is " + len + " bytes; it must be 10");
        }
        if (len < 10) throw new ProtocolException(typeName(type) + " frame is shorter than 10 bytes");
        long n = b.getInt() & 0x7FFFFFFFL;
        if (n == 0) throw new ProtocolException(typeName(type) + " frame on stream " + sid + " asks for 0 elements (rule 3.9)");
        if (type == REQUEST_N) return new Frame(sid, type, flags, null, buf, len, 0, n, 0, 0);
        return withPayload(buf, len, 10, sid, type, flags, n, 0, 0);
    }

    private static Frame error(ByteBuffer b, byte[] buf, int len, int sid, int flags) throws ProtocolException {
        if (len < 10) throw new ProtocolException("ERROR frame is shorter than 10 bytes");
        int code = b.getInt();
        checkUtf8(buf, 10, len - 10, sid);
        return new Frame(sid, ERROR, flags, null, buf, 10, len - 10, 0, code, 0);
    }

    private static Frame resumeOk(ByteBuffer b, byte[] buf, int len, int sid, int flags) throws ProtocolException {
        if (len != 14) throw new ProtocolException("RESUME_OK frame is " + len + " bytes; it must be 14");
        long pos = b.getLong();
        if (pos < 0) throw new ProtocolException("RESUME_OK frame has a position with its reserved top bit set");
        return new Frame(sid, RESUME_OK, flags, null, buf, len, 0, 0, 0, pos);
    }

    private static void checkStreamId(int sid, int type) throws ProtocolException {
        boolean streamType = type == REQUEST_RESPONSE || type == REQUEST_FNF || type == REQUEST_STREAM
                || type == REQUEST_CHANNEL || type == REQUEST_N || type == CANCEL || type == PAYLOAD;
        boolean connectionType = type == SETUP || type == LEASE || type == KEEPALIVE || type == METADATA_PUSH
                || type == RESUME || type == RESUME_OK;
        if (streamType && sid == 0) {
            throw new ProtocolException(typeName(type) + " frame on stream 0: it needs a stream id > 0");
        }
        if (connectionType && sid != 0) {
            throw new ProtocolException(typeName(type) + " frame on stream " + sid + ": only valid on stream 0");
        }
    }

    private static Frame withPayload(byte[] buf, int len, int pos, int sid, int type, int flags, long n, int code,
            long position) throws ProtocolException {
        byte[] meta = null;
        if ((flags & FLAG_METADATA) != 0) {
            if (len - pos < 3) throw new ProtocolException(typeName(type) + ": metadata flag set but no metadata length");
            int mlen = ((buf[pos] & 0xFF) << 16) | ((buf[pos + 1] & 0xFF) << 8) | (buf[pos + 2] & 0xFF);
            pos += 3;
            if (mlen > len - pos) {
                throw new ProtocolException(typeName(type) + ": metadata length " + mlen + " runs past the end of the frame");
            }
            meta = java.util.Arrays.copyOfRange(buf, pos, pos + mlen);
            pos += mlen;
        }
        return new Frame(sid, type, flags, meta, buf, pos, len - pos, n, code, position);
    }

    private static void checkUtf8(byte[] buf, int off, int len, int sid) throws ProtocolException {
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(buf, off, len));
        } catch (CharacterCodingException e) {
            throw new ProtocolException("ERROR frame on stream " + sid + ": the message is not valid UTF-8");
        }
    }
}
