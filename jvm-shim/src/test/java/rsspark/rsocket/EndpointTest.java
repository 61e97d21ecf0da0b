package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** The address grammar of rs_spark/net/protocol/address.py, as the JVM client reads it; tokens never shown. */
class EndpointTest {
    @Test
    void tcpTlsAndV6AddressesParseWithTheirSchemeHostPortNameTokenAndCodec() {
        Endpoint t = Endpoint.parse("tcp://127.0.0.1:7878/quotes?token=s3cret&codec=arrow", null);
        assertEquals("tcp", t.scheme);
        assertEquals("127.0.0.1", t.host);
        assertEquals(7878, t.port);
        assertEquals("quotes", t.name);
        assertEquals("s3cret", t.token);
        assertEquals("arrow", t.codec);
        assertEquals("tcp://127.0.0.1:7878/quotes", t.toString());
        Endpoint s = Endpoint.parse("tls://feeds.example.com:7000/a%2Fb", "given");
        assertEquals("tls", s.scheme);
        assertEquals("a/b", s.name);
        assertEquals("given", s.token, "a token given apart overrides none in the address");
        assertEquals("tls://feeds.example.com:7000", s.base());
        Endpoint v6 = Endpoint.parse("tls://[::1]:9/x", null);
        assertEquals("::1", v6.host);
        assertEquals("tls://[::1]:9", v6.base());
    }

    @Test
    void aUnixAddressIsTheSocketPathThenTheNameAsInPython() {
        Endpoint u = Endpoint.parse("unix:///run/rs/feed.sock/trades?token=t0k", null);
        assertEquals("unix", u.scheme);
        assertEquals("/run/rs/feed.sock", u.path);
        assertEquals("trades", u.name);
        assertEquals("t0k", u.token);
        assertEquals("unix:///run/rs/feed.sock", u.base());
        assertEquals("unix:///run/rs/feed.sock/trades", u.toString());
        assertTrue(u.isLoopback());
        Endpoint quoted = Endpoint.parse("unix:///tmp/s.sock/a%20b", null);
        assertEquals("/tmp/s.sock", quoted.path);
        assertEquals("a b", quoted.name);
    }

    @Test
    void badAddressesAreRefusedSayingWhatIsWrongWithoutTheToken() {
        String[][] cases = {
            {"unix://relative.sock/x?token=SECRET", "a unix socket path must be absolute"},
            {"unix:///x?token=SECRET", "names no endpoint after the socket path"},
            {"unix:///tmp/s.sock/?token=SECRET", "names no endpoint after the socket path"},
            {"ws://h:1/x?token=SECRET", "speaks tcp://, tls:// and unix:// (not ws://)"},
            {"tls://h/x?token=SECRET", "has no valid host and port"},
            {"tls://h:70000/x?token=SECRET", "has no valid host and port"},
            {"tcp://h:1/?token=SECRET", "names no endpoint"},
            {"tcp://h:1/a/b?token=SECRET", "the endpoint name must be one path segment (quote '/' as %2F)"},
            {"tcp://h:1/x?token=SECRET&tls=1", "has a query parameter other than token= and codec="},
            {"tcp://h:1/x?tokn=SECRET", "has a query parameter other than token= and codec="},
            {"tcp://h:1/x?token=SECRET&codec=json", "Arrow only"},
            {"h:1/x?token=SECRET", "has no known scheme"},
            {"tcp//h:1/x?token=SECRET", "has no known scheme"},
            {"http://h:1/x?tok=SECRET", "has no known scheme"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Endpoint.parse(c[0], null), c[0]);
            assertTrue(e.getMessage().contains(c[1]), c[0] + " -> " + e.getMessage());
            assertFalse(e.getMessage().contains("SECRET"), "the token leaked into " + e.getMessage());
            // A value that is no rs_spark address shows nothing after its first '?' or '='.
            boolean readable = c[0].contains("://") && !c[0].startsWith("http") && !c[1].contains("query parameter");
            String shown = readable ? c[0].replace("SECRET", "***") : c[0].substring(0, c[0].indexOf('?') + 1) + "***";
            assertTrue(e.getMessage().contains("'" + shown + "'"), shown + " not in " + e.getMessage());
        }
    }

    @Test
    void aValueThatIsNoAddressShowsNothingAfterItsFirstQuestionMarkOrEquals() {
        assertEquals("tcp//h:1/x?***", Endpoint.redactAddress("tcp//h:1/x?token=SECRET"));
        assertEquals("SECRET", Endpoint.redactAddress("SECRET"));
        assertEquals("a b=***", Endpoint.redactAddress("a b=tcp://h:1/x?token=SECRET"));
        assertEquals("tcp%3A%2F%2Fh%2Fx%3F***", Endpoint.redactAddress("tcp%3A%2F%2Fh%2Fx%3Ftok%3DSECRET"));
        assertEquals("tcp://h:1/x?codec=arrow&token=***", Endpoint.redactAddress("tcp://h:1/x?codec=arrow&token=SECRET"));
        assertArrayEquals(new String[] {"eu", "tcp://h:1/x"}, Endpoint.splitEndpoint(" eu = tcp://h:1/x"));
        assertArrayEquals(new String[] {null, "tcp//h:1/x?token=SECRET"}, Endpoint.splitEndpoint("tcp//h:1/x?token=SECRET"));
    }

    @Test
    void loopbackIsLocalhostALoopbackIpOrAUnixSocketAndNothingElse() {
        for (String h : new String[] {"localhost", "127.0.0.1", "127.1.2.3", "[::1]", "[0:0:0:0:0:0:0:1]"}) {
            assertTrue(Endpoint.parse("tcp://" + h + ":1/x", null).isLoopback(), h);
        }
        for (String h : new String[] {"10.0.0.1", "example.com", "[::2]", "localhost.example.com", "128.0.0.1"}) {
            assertFalse(Endpoint.parse("tcp://" + h + ":1/x", null).isLoopback(), h);
        }
    }

    @Test
    void aTokenOverPlainTcpBeyondLoopbackWarnsOncePerAddressWithoutTheToken() {
        Endpoint remote = Endpoint.parse("tcp://192.0.2.7:7001/x?token=SECRET", null);
        String w = Connection.clearTextWarning(remote);
        assertEquals("rs_spark.net: sending a token to tcp://192.0.2.7:7001 over tcp:// without TLS: anyone on the "
                + "network path can read it and the data; use tls:// (option tlsCaFile: the server's certificate or its "
                + "CA) on untrusted networks", w);
        assertNull(Connection.clearTextWarning(remote), "warned twice");
        assertNull(Connection.clearTextWarning(Endpoint.parse("tcp://192.0.2.7:7001/other?token=SECRET", null)),
                "warned again for the same server");
        assertNotNull(Connection.clearTextWarning(Endpoint.parse("tcp://192.0.2.8:7001/x?token=SECRET", null)));
        assertNull(Connection.clearTextWarning(Endpoint.parse("tcp://127.0.0.1:7002/x?token=SECRET", null)), "loopback");
        assertNull(Connection.clearTextWarning(Endpoint.parse("tls://192.0.2.9:7001/x?token=SECRET", null)), "TLS");
        assertNull(Connection.clearTextWarning(Endpoint.parse("tcp://192.0.2.10:7001/x", null)), "no token");
    }
}
