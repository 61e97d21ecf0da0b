package rsspark.rsocket;

/**
 * One decoded RSocket frame (length prefix removed). {@code data} is a view into the received
 * buffer: {@code buf[dataOffset, dataOffset + dataLength)}; {@code metadata} is a copy (small).
 */
public record Frame(
        int streamId,
        int type,
        int flags,
        byte[] metadata, // null when the frame has none
        byte[] buf,
        int dataOffset,
        int dataLength,
        /* REQUEST_N's n, REQUEST_STREAM / REQUEST_CHANNEL's initial n. */
        long requestN,
        /* ERROR's code. */
        int errorCode,
        /* RESUME_OK's position. */
        long position) {

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
