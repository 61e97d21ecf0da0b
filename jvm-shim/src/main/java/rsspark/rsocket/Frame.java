package rsspark.rsocket;

/**
 * One decoded RSocket frame (length prefix removed). {@code data} is a view into the received
 * buffer: {@code buf[dataOffset, dataOffset + dataLength)}; {@code metadata} is a copy (small).
 */
public final class Frame {
    public final int streamId;
    public final int type;
    public final int flags;
    public final byte[] metadata; // null when the frame has none
    public final byte[] buf;
    public final int dataOffset;
    public final int dataLength;
    /** REQUEST_N's n, REQUEST_STREAM / REQUEST_CHANNEL's initial n. */
    public final long requestN;
    /** ERROR's code. */
    public final int errorCode;
    /** RESUME_OK's position. */
    public final long position;

    Frame(int streamId, int type, int flags, byte[] metadata, byte[] buf, int dataOffset, int dataLength,
            long requestN, int errorCode, long position) {
        this.streamId = streamId;
        this.type = type;
        this.flags = flags;
        this.metadata = metadata;
        this.buf = buf;
        this.dataOffset = dataOffset;
        this.dataLength = dataLength;
        this.requestN = requestN;
        this.errorCode = errorCode;
        this.position = position;
    }

    public boolean has(int flag) {
        return (flags & flag) != 0;
    }

    /** The data as a new array (small frames: error text, keepalive data). */
    public byte[] data() {
        return java.util.Arrays.copyOfRange(buf, dataOffset, dataOffset + dataLength);
    }

    /** ERROR's message (UTF-8, checked when decoded). */
    public String text() {
        return new String(buf, dataOffset, dataLength, java.nio.charset.StandardCharsets.UTF_8);
    }

    public String typeName() {
        return Frames.typeName(type);
    }
}
