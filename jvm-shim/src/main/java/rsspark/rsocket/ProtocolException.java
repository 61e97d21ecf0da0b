package rsspark.rsocket;

import java.io.IOException;

/** Bytes from the peer that do not follow RSocket's or rs_spark's layout; the connection is closed. */
public class ProtocolException extends IOException {
    private static final long serialVersionUID = 1L;

    public ProtocolException(String message) {
        super(message);
    }

    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
