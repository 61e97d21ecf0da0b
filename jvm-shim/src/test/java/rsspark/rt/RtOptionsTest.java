package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rsspark.rsocket.StreamReader;

/** format("reactive-rt")'s options: defaults, case, refusals and their messages (RtOptions). */
class RtOptionsTest {
    static final String EP = "tcp://127.0.0.1:7000/feed?token=SECRET&codec=arrow";

    static Map<String, String> opts(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    static String refused(String... kv) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RtOptions.parse(opts(kv)));
        assertFalse(e.getMessage().contains("SECRET"), "the token leaked into " + e.getMessage());
        return e.getMessage();
    }

    @Test
    void anEndpointAloneGetsTheDocumentedDefaults() {
        RtOptions o = RtOptions.parse(opts("endpoint", EP));
        assertTrue(o.isEndpoint());
        assertEquals(1000, o.maxInFlight);
        assertNull(o.maxRecordsPerTrigger);
        assertEquals(100_000, o.maxBufferedRecords);
        assertEquals(500, o.pollTimeoutMs);
        assertTrue(o.resume);
        assertTrue(o.cancelOnStop);
        assertEquals(0.0, o.resumeWindow);
        assertEquals(10_000, o.connectTimeoutMs);
        assertTrue(o.tls.isDefault());
        assertEquals("remote publisher tcp://127.0.0.1:7000/feed", o.describe());
        StreamReader.Settings s = o.readerSettings();
        assertEquals(1000, s.maxInFlight);
        assertEquals(10_000, s.connection.connectTimeoutMs);
    }

    @Test
    void keysAreCaseInsensitiveAndValuesParsedInTheirGrammars() {
        RtOptions o = RtOptions.parse(opts("ENDPOINT", EP, "maxinflight", "64", "MaxBufferedRecords", "500",
                "maxRecordsPerTrigger", "200", "pollTimeout", "1s", "resumable", "FALSE", "cancelOnStop", "false",
                "resumeWindow", "2 minutes", "connectTimeout", "1500ms", "token", "OTHER", "path", "ignored"));
        assertEquals(64, o.maxInFlight);
        assertEquals(500, o.maxBufferedRecords);
        assertEquals(200L, o.maxRecordsPerTrigger);
        assertEquals(1000, o.pollTimeoutMs);
        assertFalse(o.resume);
        assertFalse(o.cancelOnStop);
        assertEquals(120.0, o.resumeWindow);
        assertEquals(1500, o.connectTimeoutMs);
        assertEquals("OTHER", o.endpoint(RtOptions.SINGLE).token, "option token overrides the address's");
        StreamReader.Settings s = o.readerSettings();
        assertEquals(64, s.maxInFlight);
        assertEquals(120.0, s.windowSeconds);
        assertEquals(1500, s.connection.connectTimeoutMs);
    }

    @Test
    void optionsUnderPublisherReachTheFactoryInTheCaseWritten() {
        RtOptions o = RtOptions.parse(opts("jvmPublisher", "com.example.Feeds#quotes", "publisher.Count", "5",
                "publisher.symbol", "X"));
        assertFalse(o.isEndpoint());
        assertEquals(Map.of("Count", "5", "symbol", "X"), o.factoryOptions);
        assertEquals("JVM publisher com.example.Feeds#quotes", o.describe());
    }

    @Test
    void exactlyOneOfEndpointAndJvmPublisherIsRequired() {
        assertTrue(refused().contains("needs exactly one of option 'endpoint'"));
        assertTrue(refused().contains("got neither"));
        assertTrue(refused("endpoint", EP, "jvmPublisher", "a.B#c").contains("got both"));
        assertTrue(refused("jvmPublisher", "a.B c").contains("must look like 'com.example.Feeds#method'"));
    }

    @Test
    void anUnknownOptionIsRefusedWithAHintAndTheListOfOptions() {
        String m = refused("endpoint", EP, "maxInFlite", "5");
        assertTrue(m.startsWith("format('reactive-rt') has no option 'maxInFlite' (check its spelling)"), m);
        assertTrue(m.contains("Its options: endpoint, jvmPublisher, token, tlsCaFile, tlsCertFile, tlsKeyFile, "
                + "tlsHostname, schema, maxInFlight"), m);
        assertTrue(refused("endpoint", EP, "numPartitions", "2").contains("one long-running task"));
        assertTrue(refused("endpoint", EP, "logPath", "/x").contains("offsets live in the query's checkpoint"));
        assertTrue(refused("endpoint", EP, "publisher", "m:f").contains("runs in the Python 'reactive' source only"));
        assertTrue(refused("endpoint", EP, "failOnDataLoss", "true").contains("does not apply to 'reactive-rt'"));
    }

    @Test
    void badValuesAreRefusedNamingTheOptionAndTheRange() {
        assertEquals("format('reactive-rt'): option maxInFlight='0' must be an integer in 1..16777216",
                refused("endpoint", EP, "maxInFlight", "0"));
        assertEquals("format('reactive-rt'): option maxBufferedRecords='many' must be an integer in 1..2147483647",
                refused("endpoint", EP, "maxBufferedRecords", "many"));
        assertEquals("format('reactive-rt'): option resumable='yes' is not a boolean: use true or false",
                refused("endpoint", EP, "resumable", "yes"));
        assertTrue(refused("endpoint", EP, "pollTimeout", "5").contains("option pollTimeout='5': a duration needs a unit"));
        assertTrue(refused("endpoint", EP, "connectTimeout", "10ms").contains("is below its minimum of 100ms"));
        assertTrue(refused("endpoint", EP, "resumeWindow", "500ms").contains("is below its minimum of 1s"));
        String m = refused("endpoint", EP, "maxRecordsPerTrigger", "2000", "maxBufferedRecords", "1000");
        assertTrue(m.contains("maxRecordsPerTrigger=2000 exceeds maxBufferedRecords=1000"), m);
    }

    @Test
    void aBadEndpointFailsAtParseWithoutShowingTheToken() {
        assertTrue(refused("endpoint", "ws://127.0.0.1:1/x?token=SECRET").contains("(not ws://)"));
        assertTrue(refused("endpoint", "tcp://127.0.0.1:1/x?token=SECRET&codec=json").contains("Arrow only"));
    }

    @Test
    void tlsAndUnixEndpointsAreAccepted() {
        assertEquals("tls", RtOptions.parse(opts("endpoint", "tls://feeds.example.com:7000/x")).endpoint(RtOptions.SINGLE).scheme);
        RtOptions u = RtOptions.parse(opts("endpoint", "unix:///tmp/rs.sock/x?token=SECRET"));
        assertEquals("/tmp/rs.sock", u.endpoint(RtOptions.SINGLE).path);
        assertEquals("remote publisher unix:///tmp/rs.sock/x", u.describe());
    }

    @Test
    void tlsOptionsAreRefusedWhereNoTlsEndpointUsesThem(@TempDir Path dir) throws Exception {
        Path ca = dir.resolve("ca.pem");
        Files.writeString(ca, "not a certificate");
        String m = refused("endpoint", EP, "tlsCaFile", ca.toString());
        assertTrue(m.contains("option tlsCaFile applies to tls:// endpoints, but the endpoint is tcp://127.0.0.1:7000/feed"), m);
        m = refused("endpoint", "unix:///tmp/x.sock/x", "tlsHostname", "h");
        assertTrue(m.contains("option tlsHostname applies to tls:// endpoints"), m);
        m = refused("jvmPublisher", "a.B#c", "tlsCaFile", ca.toString());
        assertTrue(m.contains("option jvmPublisher reads no endpoint"), m);
        m = refused("endpoint", "tls://h:1/x?token=SECRET", "tlsKeyFile", ca.toString());
        assertTrue(m.contains("option tlsKeyFile is the key of a client certificate: give option tlsCertFile"), m);
    }

    @Test
    void aTlsEndpointsFilesAreReadAtParseSoABadOneFailsBeforeTheQueryStarts(@TempDir Path dir) throws Exception {
        Path ca = dir.resolve("ca.pem");
        Files.writeString(ca, "not a certificate");
        String m = refused("endpoint", "tls://h:1/x?token=SECRET", "TLSCAFILE", ca.toString());
        assertTrue(m.startsWith("format('reactive-rt'): option tlsCaFile='" + ca + "' holds no PEM certificate"), m);
        m = refused("endpoint", "tls://h:1/x?token=SECRET", "tlsCaFile", dir.resolve("absent.pem").toString());
        assertTrue(m.contains("cannot be read"), m);
        assertTrue(m.contains("readable on the driver and every executor"), m);
    }

    @Test
    void theTlsOptionsReachTheConnectionSettings() {
        RtOptions o = RtOptions.parse(opts("endpoint", "tls://127.0.0.1:1/x", "tlsHostname", "feeds.example.com"));
        assertEquals("feeds.example.com", o.readerSettings().connection.tls.hostname);
        assertNull(o.readerSettings().connection.tls.caFile);
    }
}
