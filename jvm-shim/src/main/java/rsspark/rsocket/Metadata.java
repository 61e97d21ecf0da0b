package rsspark.rsocket;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * RSocket metadata extensions (composite metadata, routing, bearer authentication) and the
 * rs_spark conventions for resumable streams (rs_spark/net/protocol/metadata.py, rs_spark/net/zero_loss/resume.py).
 */
public final class Metadata {
    private Metadata() {}

    public static final String COMPOSITE = "message/x.rsocket.composite-metadata.v0";
    public static final String ROUTING = "message/x.rsocket.routing.v0";
    public static final String AUTHENTICATION = "message/x.rsocket.authentication.v0";
    /** SETUP entry asking for an rs_spark resumable stream: JSON {"window": seconds}. */
    public static final String RESUME_MIME = "message/x.rs-spark.resume.v1";
    /** METADATA_PUSH entry acknowledging a stream position (8 bytes, big endian). */
    public static final String COMMIT_MIME = "message/x.rs-spark.commit.v1";
    public static final String ARROW_MIME = "application/vnd.apache.arrow.stream";

    private static final Map<String, Integer> WELL_KNOWN = Map.of(
            "application/json", 0x05, "application/octet-stream", 0x06, "text/plain", 0x21,
            AUTHENTICATION, 0x7C, ROUTING, 0x7E, COMPOSITE, 0x7F);
    private static final int AUTH_BEARER = 0x01;
    private static final int MAX_ENTRY = 0xFFFFFF;

    /** One composite entry. */
    public record Entry(String mime, byte[] payload) {}

    public static byte[] composite(List<Entry> entries) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Entry e : entries) {
            Integer id = WELL_KNOWN.get(e.mime());
            if (id != null) {
                out.write(0x80 | id);
            } else {
                byte[] m = e.mime().getBytes(StandardCharsets.US_ASCII);
                if (m.length < 1 || m.length > 128) throw new IllegalArgumentException("MIME type " + e.mime() + " is not 1..128 bytes");
                out.write(m.length - 1);
                out.write(m, 0, m.length);
            }
            if (e.payload().length > MAX_ENTRY) throw new IllegalArgumentException("a metadata entry is at most 16 MiB");
            out.write(e.payload().length >>> 16);
            out.write(e.payload().length >>> 8);
            out.write(e.payload().length);
            out.write(e.payload(), 0, e.payload().length);
        }
        return out.toByteArray();
    }

    /** Composite entries of {@code buf}; well-known ids this side does not name come back as "well-known/0xNN". */
    public static List<Entry> parseComposite(byte[] buf) throws ProtocolException {
        List<Entry> out = new ArrayList<>();
        int pos = 0;
        int n = buf.length;
        while (pos < n) {
            int b = buf[pos++] & 0xFF;
            String mime;
            if ((b & 0x80) != 0) {
                mime = nameOf(b & 0x7F);
            } else {
                int ln = (b & 0x7F) + 1;
                if (pos + ln > n) throw new ProtocolException("composite metadata: a MIME type runs past the end");
                mime = new String(buf, pos, ln, StandardCharsets.US_ASCII);
                pos += ln;
            }
            if (pos + 3 > n) throw new ProtocolException("composite metadata: an entry length is missing");
            int ln = ((buf[pos] & 0xFF) << 16) | ((buf[pos + 1] & 0xFF) << 8) | (buf[pos + 2] & 0xFF);
            pos += 3;
            if (ln > n - pos) throw new ProtocolException("composite metadata: an entry of " + ln + " bytes runs past the end");
            out.add(new Entry(mime, java.util.Arrays.copyOfRange(buf, pos, pos + ln)));
            pos += ln;
        }
        return out;
    }

    private static String nameOf(int id) {
        for (Map.Entry<String, Integer> e : WELL_KNOWN.entrySet()) {
            if (e.getValue() == id) return e.getKey();
        }
        return String.format("well-known/0x%02x", id);
    }

    public static byte[] routing(String tag) {
        byte[] t = tag.getBytes(StandardCharsets.UTF_8);
        if (t.length < 1 || t.length > 255) throw new IllegalArgumentException("a route tag is 1..255 UTF-8 bytes");
        byte[] out = new byte[t.length + 1];
        out[0] = (byte) t.length;
        System.arraycopy(t, 0, out, 1, t.length);
        return out;
    }

    public static byte[] bearer(String token) {
        byte[] t = token.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[t.length + 1];
        out[0] = (byte) (0x80 | AUTH_BEARER);
        System.arraycopy(t, 0, out, 1, t.length);
        return out;
    }

    /** SETUP metadata: the token (if any) as a bearer credential, then {@code extra}. */
    public static byte[] setup(String token, List<Entry> extra) {
        List<Entry> all = new ArrayList<>();
        if (token != null && !token.isEmpty()) all.add(new Entry(AUTHENTICATION, bearer(token)));
        all.addAll(extra);
        return all.isEmpty() ? null : composite(all);
    }

    /** A request's metadata naming endpoint {@code name}. */
    public static byte[] route(String name) {
        return composite(List.of(new Entry(ROUTING, routing(name))));
    }

    /** The SETUP entry asking for resumption, with the window the reader asks for (seconds; <= 0: the server's). */
    public static Entry resumeEntry(double windowSeconds) {
        String json = windowSeconds > 0 ? "{\"window\": " + windowSeconds + "}" : "{}";
        return new Entry(RESUME_MIME, json.getBytes(StandardCharsets.UTF_8));
    }

    /** METADATA_PUSH metadata acknowledging every row before {@code position}. */
    public static byte[] commit(long position) {
        return composite(List.of(new Entry(COMMIT_MIME, ByteBuffer.allocate(8).putLong(position).array())));
    }

    public static final String STREAM_MIME = "message/x.rs-spark.stream.v1";

    /**
     * METADATA_PUSH metadata acknowledging every row before {@code position} of stream {@code key}: on
     * any connection that passed SETUP with the endpoint's token, not only the stream's own.
     */
    public static byte[] commitOf(String key, long position) {
        return composite(List.of(new Entry(COMMIT_MIME, ByteBuffer.allocate(8).putLong(position).array()),
                new Entry(STREAM_MIME, checkKey(key).getBytes(StandardCharsets.US_ASCII))));
    }

    /** A resumable stream's key: 32 lower-case hex digits (public: it appears in Spark's offsets). */
    public static String checkKey(String key) {
        if (key == null || !key.matches("[0-9a-f]{32}")) {
            throw new IllegalArgumentException("a resumable stream key is 32 lower-case hex digits, got " + key);
        }
        return key;
    }

    public static String newKey() {
        return java.util.UUID.randomUUID().toString().replace("-", "");
    }

    /** HMAC-SHA256(endpoint token, "rs_spark resume v1|" + key): proves knowledge of the token without sending it. */
    public static byte[] resumeToken(String endpointToken, String key) {
        try {
            byte[] secret = (endpointToken == null ? "" : endpointToken).getBytes(StandardCharsets.UTF_8);
            Mac mac = Mac.getInstance("HmacSHA256");
            // An empty token is legal (an unguarded endpoint); SecretKeySpec refuses empty keys, and
            // HMAC pads any key to the block size with zeros, so one zero byte is the same key.
            mac.init(new SecretKeySpec(secret.length == 0 ? new byte[1] : secret, "HmacSHA256"));
            return mac.doFinal(("rs_spark resume v1|" + checkKey(key)).getBytes(StandardCharsets.US_ASCII));
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }
}
