package rsspark.rsocket;

import java.io.IOException;

/** The connection could not be opened, dropped, or the peer went silent past the keepalive lifetime. */
public class ConnectionLostException extends IOException {
    private static final long serialVersionUID = 1L;

    public ConnectionLostException(String message) {
        super(message);
    }

    public ConnectionLostException(String message, Throwable cause) {
        super(message, cause);
    }
}
