package rsspark.rsocket;

import java.io.Serializable;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * An rs_spark.net address, {@code tcp://HOST:PORT/NAME?token=...&codec=arrow} (rs_spark/net/address.py).
 * This client speaks plain TCP only; {@link #toString} never shows the token.
 */
public final class Endpoint implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final String HINT = "expected 'tcp://HOST:PORT/NAME', optionally followed by '?token=...&codec=arrow'";

    public final String host;
    public final int port;
    public final String name;
    public final String token; // null: none
    public final String codec; // null: not given

    public Endpoint(String host, int port, String name, String token, String codec) {
        this.host = host;
        this.port = port;
        this.name = name;
        this.token = token;
        this.codec = codec;
    }

    /** Parse {@code address}; {@code token} (may be null) overrides one in the address. */
    public static Endpoint parse(String address, String token) {
        if (address == null) throw new IllegalArgumentException("no endpoint address given: " + HINT);
        String shown = redact(address);
        int sep = address.indexOf("://");
        if (sep < 0) throw new IllegalArgumentException("address '" + shown + "' has no scheme: " + HINT);
        String scheme = address.substring(0, sep);
        if (!scheme.equals("tcp")) {
            throw new IllegalArgumentException("address '" + shown + "': the JVM client of the real-time source and sink "
                    + "speaks tcp:// only (not " + scheme + "://); serve the endpoint on tcp://, e.g. over an SSH tunnel "
                    + "or a private network: " + HINT);
        }
        String rest = address.substring(sep + 3);
        String query = "";
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        int slash = rest.indexOf('/');
        if (slash < 0 || slash == rest.length() - 1) {
            throw new IllegalArgumentException("address '" + shown + "' names no endpoint: " + HINT);
        }
        String name = URLDecoder.decode(rest.substring(slash + 1), StandardCharsets.UTF_8);
        if (name.contains("/")) throw new IllegalArgumentException("address '" + shown + "': the name is one path segment: " + HINT);
        String hostPort = rest.substring(0, slash);
        int colon = hostPort.lastIndexOf(':');
        String host = colon > 0 ? hostPort.substring(0, colon) : "";
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (host.isEmpty() || port < 1 || port > 65535) {
            throw new IllegalArgumentException("address '" + shown + "' has no valid host and port: " + HINT);
        }
        String tok = null;
        String codec = null;
        for (String kv : query.split("&")) {
            if (kv.isEmpty()) continue;
            int eq = kv.indexOf('=');
            String k = eq < 0 ? kv : kv.substring(0, eq);
            String v = eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
            if (k.equals("token")) tok = v.isEmpty() ? null : v;
            else if (k.equals("codec")) codec = v.isEmpty() ? null : v;
            else throw new IllegalArgumentException("address '" + shown + "' has an unknown query parameter '" + k + "': " + HINT);
        }
        if (codec != null && !codec.equals("arrow")) {
            throw new IllegalArgumentException("address '" + shown + "' asks for codec '" + codec + "'; the real-time "
                    + "source and sink read and write Arrow only: serve the endpoint with codec 'arrow'");
        }
        return new Endpoint(host, port, name, token != null && !token.isEmpty() ? token : tok, codec);
    }

    /**
     * {@code text} with every token value replaced by ***: the form for logs and errors; the same
     * rules as Python's {@code rs_spark.net.address.redact} (several comma-separated addresses, and
     * URL-encoded ones, keep their places).
     */
    public static String redact(String text) {
        if (text == null) return null;
        return text.replaceAll("(?i)(token=)[^&,\\s'\"]+", "$1***")
                .replaceAll("(?i)(token%3D)(?:(?!%26|%2C)[^&,\\s'\"])*", "$1***");
    }

    public String base() {
        return "tcp://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    @Override
    public String toString() {
        return base() + "/" + name;
    }
}
