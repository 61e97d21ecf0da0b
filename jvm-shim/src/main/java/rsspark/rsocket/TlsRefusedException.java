package rsspark.rsocket;

/**
 * TLS with the server failed for a reason trying again cannot fix (its certificate is not trusted or
 * names another host, or it refused ours): final, not an outage, as Python's {@code Refused}.
 */
public class TlsRefusedException extends ConnectionLostException {
    private static final long serialVersionUID = 1L;

    public TlsRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
