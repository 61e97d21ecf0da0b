package rsspark.rsocket;

import java.io.IOException;

/** The peer sent ERROR: {@link #code} is its error code (see {@link Frames#errorName}). */
public class RemoteException extends IOException {
    private static final long serialVersionUID = 1L;
    public final int code;

    public RemoteException(int code, String message) {
        super(message);
        this.code = code;
    }
}
