package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** The real-time sink's options (ReactiveSinkWriter.SinkOptions): defaults, refusals, and the TLS options shared with the source. */
class SinkOptionsTest {
    static final String SCHEMA = "{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}";

    static String refused(String endpoint, String... kv) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ReactiveSinkWriter.create(endpoint, SCHEMA, RtOptionsTest.opts(kv)));
        assertFalse(e.getMessage().contains("SECRET"), "the token leaked into " + e.getMessage());
        return e.getMessage();
    }

    @Test
    void defaultsAndDurationsParse() {
        ReactiveSinkWriter.SinkOptions o = ReactiveSinkWriter.SinkOptions.parse(RtOptionsTest.opts(
                "MAXROWSPERPAYLOAD", "16", "ackTimeout", "2 minutes", "tlsHostname", "hub.example.com"));
        assertEquals(16, o.maxRowsPerPayload);
        assertEquals(10_000, o.maxQueuedRows);
        assertEquals(120_000, o.ackTimeoutMs);
        assertEquals(10_000, o.connectTimeoutMs);
        assertEquals("hub.example.com", o.tls.hostname);
    }

    @Test
    void unknownOrMisplacedOptionsAreRefusedNamingThem() {
        String m = refused("tcp://127.0.0.1:1/hub?token=SECRET", "maxRows", "5");
        assertTrue(m.contains("has no option 'maxrows'; its options: maxRowsPerPayload, maxQueuedRows, ackTimeout, "
                + "connectTimeout, keepaliveInterval, keepaliveTimeout, reconnectBackoff, reconnectBackoffMax, "
                + "reconnectTimeout, maxRetainedRows, tlsCaFile, tlsCertFile, tlsKeyFile, tlsHostname"), m);
        m = refused("tcp://127.0.0.1:1/hub?token=SECRET", "tlsCa", "/x.pem");
        assertTrue(m.contains("has no option 'tlsca'; its options: maxRowsPerPayload"), m);
        m = refused("tcp://127.0.0.1:1/hub?token=SECRET", "tlsCaFile", "/x.pem");
        assertTrue(m.startsWith("the real-time reactive sink: option tlsCaFile applies to tls:// endpoints"), m);
        m = refused("tls://127.0.0.1:1/hub?token=SECRET", "tlsCaFile", "/nonexistent/ca.pem");
        assertTrue(m.startsWith("the real-time reactive sink: option tlsCaFile='/nonexistent/ca.pem' cannot be read"), m);
        m = refused("tcp://127.0.0.1:1/hub?token=SECRET", "ackTimeout", "5");
        assertTrue(m.contains("option ackTimeout='5': a duration needs a unit"), m);
        assertNotNull(ReactiveSinkWriter.create("unix:///tmp/hub.sock/hub?token=SECRET", SCHEMA, RtOptionsTest.opts()));
    }
}
