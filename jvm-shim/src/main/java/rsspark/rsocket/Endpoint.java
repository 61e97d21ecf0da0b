package rsspark.rsocket;

import java.io.Serializable;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An rs_spark.net address (rs_spark/net/protocol/address.py): {@code tcp://HOST:PORT/NAME},
 * {@code tls://HOST:PORT/NAME} or {@code unix:///PATH/TO.sock/NAME}, optionally followed by
 * {@code ?token=...&codec=arrow}. For {@code unix} the name is the last path segment and
 * everything before it the socket path. {@link #toString} never shows the token.
 */
public final class Endpoint implements Serializable {
    private static final long serialVersionUID = 2L;
    private static final String HINT = "expected 'tcp://HOST:PORT/NAME', 'tls://HOST:PORT/NAME' or "
            + "'unix:///PATH/TO.sock/NAME', optionally followed by '?token=...&codec=arrow'";

    /** {@code tcp}, {@code tls} or {@code unix}. */
    public final String scheme;
    public final String host; // "" for unix
    public final int port; // 0 for unix
    public final String path; // the socket path for unix, else null
    public final String name;
    public final String token; // null: none
    public final String codec; // null: not given

    public Endpoint(String host, int port, String name, String token, String codec) {
        this("tcp", host, port, null, name, token, codec);
    }

    private Endpoint(String scheme, String host, int port, String path, String name, String token, String codec) {
        this.scheme = scheme;
        this.host = host;
        this.port = port;
        this.path = path;
        this.name = name;
        this.token = token;
        this.codec = codec;
    }

    /** Parse {@code address}; {@code token} (may be null) overrides one in the address. */
    public static Endpoint parse(String address, String token) {
        if (address == null) throw new IllegalArgumentException("no endpoint address given: " + HINT);
        String shown = redact(address);
        if (!RECOGNISED.matcher(address).lookingAt()) {
            throw new IllegalArgumentException("address '" + redactAddress(address) + "' has no known scheme: " + HINT);
        }
        int sep = address.indexOf("://");
        String scheme = address.substring(0, sep);
        if (!scheme.equals("tcp") && !scheme.equals("tls") && !scheme.equals("unix")) {
            throw new IllegalArgumentException("address '" + shown + "': the JVM client of the real-time source and sink "
                    + "speaks tcp://, tls:// and unix:// (not " + scheme + "://); serve the endpoint on one of those: "
                    + HINT);
        }
        String rest = address.substring(sep + 3);
        String query = "";
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        Endpoint e = scheme.equals("unix") ? parseUnix(rest, shown) : parseNetwork(scheme, rest, shown);
        String tok = null;
        String codec = null;
        for (String kv : query.split("&")) {
            if (kv.isEmpty()) continue;
            int eq = kv.indexOf('=');
            String k = eq < 0 ? kv : kv.substring(0, eq);
            String v = eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
            if (k.equals("token")) tok = v.isEmpty() ? null : v;
            else if (k.equals("codec")) codec = v.isEmpty() ? null : v;
            else throw new IllegalArgumentException("address '" + cut(address) + "' has a query parameter other than "
                    + "token= and codec=; check their spelling: " + HINT); // not named: a misspelt token would show
        }
        if (codec != null && !codec.equals("arrow")) {
            throw new IllegalArgumentException("address '" + shown + "' asks for codec '" + codec + "'; the real-time "
                    + "source and sink read and write Arrow only: serve the endpoint with codec 'arrow'");
        }
        String t = token != null && !token.isEmpty() ? token : tok;
        return new Endpoint(e.scheme, e.host, e.port, e.path, e.name, t, codec);
    }

    /** {@code /path/to.sock/name}: the name last, the socket path absolute (as Python's _parse_unix). */
    private static Endpoint parseUnix(String rest, String shown) {
        if (!rest.startsWith("/")) {
            throw new IllegalArgumentException("address '" + shown + "': a unix socket path must be absolute: " + HINT);
        }
        int slash = rest.lastIndexOf('/');
        String path = rest.substring(0, slash);
        String raw = rest.substring(slash + 1);
        if (raw.isEmpty() || path.isEmpty()) {
            throw new IllegalArgumentException("address '" + shown + "' names no endpoint after the socket path: " + HINT);
        }
        return new Endpoint("unix", "", 0, path, URLDecoder.decode(raw, StandardCharsets.UTF_8), null, null);
    }

    /** {@code host:port/name} or {@code [v6 host]:port/name}. */
    private static Endpoint parseNetwork(String scheme, String rest, String shown) {
        int slash = rest.indexOf('/');
        if (slash < 0 || slash == rest.length() - 1) {
            throw new IllegalArgumentException("address '" + shown + "' names no endpoint: " + HINT);
        }
        String raw = rest.substring(slash + 1);
        if (raw.contains("/")) {
            throw new IllegalArgumentException("address '" + shown + "': the endpoint name must be one path segment "
                    + "(quote '/' as %2F): " + HINT);
        }
        String name = URLDecoder.decode(raw, StandardCharsets.UTF_8);
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
        return new Endpoint(scheme, host, port, null, name, null, null);
    }

    /**
     * Whether only this machine can reach it: a Unix socket, {@code localhost} or a loopback IP
     * literal (a host name other than {@code localhost} counts as remote: it is not resolved), as
     * Python's {@code Address.is_loopback}.
     */
    public boolean isLoopback() {
        if (scheme.equals("unix") || host.equals("localhost")) return true;
        if (host.matches("127(\\.\\d{1,3}){3}")) return true;
        String h = host.toLowerCase(java.util.Locale.ROOT);
        return h.equals("::1") || h.matches("(0{0,4}:){7}0{0,3}1");
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

    private static final Pattern RECOGNISED = Pattern.compile("(?:tcp|tls|unix|ws|wss)://");
    private static final Pattern CUT = Pattern.compile("[?=]|%3[DdFf]"); // '?' or '=', or either URL-encoded
    /** What a partition id in a list of endpoints is made of: letters, digits, '_', '-' and '.' (as Python's PLAIN_NAME). */
    public static final Pattern PLAIN_NAME = Pattern.compile("[A-Za-z0-9._-]+");

    /**
     * How errors and logs show one address a user gave (as Python's {@code redact_address}): a recognised
     * one (an rs_spark {@code scheme://}) with its token redacted ({@link #redact}); any other value only up
     * to its first {@code ?} or {@code =}, then ***: what cannot be read may hold a token after them under
     * any name ({@code tcp//h:1/x?token=...}, its colon missing, reads as no address at all).
     */
    public static String redactAddress(String value) {
        if (value == null) return null;
        return RECOGNISED.matcher(value.strip()).lookingAt() ? redact(value) : cut(value);
    }

    /** {@code text} up to its first {@code ?} or {@code =} (URL-encoded too), then ***; tokens redacted. */
    private static String cut(String text) {
        Matcher m = CUT.matcher(text);
        return redact(m.find() ? text.substring(0, m.end()) + "***" : text);
    }

    /**
     * One item of a comma-separated list of endpoints (as Python's {@code split_endpoint}): {@code id=address}
     * gives {@code {id, address}} when the text before its first {@code =} is a plain name ({@link #PLAIN_NAME});
     * any other item is an address: {@code {null, item}} (so {@code tcp//h:1/x?token=...} is a malformed
     * address, never an id).
     */
    public static String[] splitEndpoint(String item) {
        int eq = item.indexOf('=');
        if (eq >= 0 && PLAIN_NAME.matcher(item.substring(0, eq).trim()).matches()) {
            return new String[] {item.substring(0, eq).trim(), item.substring(eq + 1).trim()};
        }
        return new String[] {null, item.trim()};
    }

    /** Where to connect, without name or query: {@code tcp://host:port} ({@code [v6]} hosts in brackets) or {@code unix:///path}. */
    public String base() {
        if (scheme.equals("unix")) return "unix://" + path;
        return scheme + "://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    @Override
    public String toString() {
        return base() + "/" + name;
    }
}
