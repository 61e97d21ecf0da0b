package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;
import static rsspark.rsocket.ClientAgainstPythonServerTest.IDS;
import static rsspark.rsocket.ClientAgainstPythonServerTest.range;
import static rsspark.rsocket.ClientAgainstPythonServerTest.settings;
import static rsspark.rsocket.ClientAgainstPythonServerTest.take;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client over tls:// and unix:// against the real Python rs_spark.net server
 * (tests/realtime/fixture_server.py with --tls / --bind), with throwaway certificates.
 */
class TlsAndUnixAgainstPythonServerTest {
    @TempDir
    static Path dir;
    static String[] server; // CN=localhost, IP:127.0.0.1, DNS:localhost
    static String[] other; // a certificate that signed nothing the server shows
    static String[] named; // names only rs-spark.test
    static String[] client; // the client's own certificate

    @BeforeAll
    static void certificates() throws Exception {
        Assumptions.assumeTrue(TestCertificates.opensslAvailable(),
                "openssl is not on PATH; the TLS tests need it to make throwaway certificates");
        TestCertificates t = new TestCertificates(dir);
        server = t.make("server", "localhost", "IP:127.0.0.1,DNS:localhost");
        other = t.make("other", "localhost", "IP:127.0.0.1,DNS:localhost");
        named = t.make("named", "rs-spark.test", "DNS:rs-spark.test");
        client = t.make("client", "rs-spark-client", null);
    }

    static StreamReader.Settings tls(TlsSettings tls) {
        StreamReader.Settings s = settings(8);
        s.connection.tls = tls;
        s.connection.connectTimeoutMs = 20_000;
        s.reconnectForMs = 0;
        return s;
    }

    static StreamReader<long[]> open(Endpoint ep, StreamReader.Settings s) throws IOException {
        return StreamReader.open(ep, s, IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0);
    }

    static void assertNoToken(Endpoint ep, Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            assertFalse(String.valueOf(c.getMessage()).contains(ep.token), "the token leaked into " + c);
        }
    }

    @Test
    void readsEveryRowOverTlsWithTheServerVerifiedAgainstTlsCaFile() throws Exception {
        try (PythonFixture py = new PythonFixture("--tls", server[0], server[1], "rows", "50")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            assertEquals("tls", ep.scheme);
            StreamReader<long[]> r = open(ep, tls(new TlsSettings(server[0], null, null, null)));
            assertEquals(range(0, 50), take(r, 50));
            assertNull(r.poll(TimeUnit.SECONDS.toNanos(30)));
            assertTrue(r.isComplete());
            r.detach(); // close_notify, then FIN: the graceful close over TLS
        }
    }

    @Test
    void aServerCertificateNotInTlsCaFileIsRefusedSayingWhatAndWhere() throws Exception {
        try (PythonFixture py = new PythonFixture("--tls", server[0], server[1], "rows", "10")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            ConnectionLostException e = assertThrows(ConnectionLostException.class,
                    () -> open(ep, tls(new TlsSettings(other[0], null, null, null))));
            assertTrue(e.getMessage().startsWith("TLS with " + ep.base() + " failed: this client does not trust the "
                    + "server's certificate"), e.getMessage());
            assertTrue(e.getMessage().contains("option tlsCaFile"), e.getMessage());
            assertTrue(e.getMessage().contains("now it is '" + other[0] + "'"), e.getMessage());
            assertNoToken(ep, e);
            assertTrue(py.lines().stream().noneMatch(l -> l.startsWith("REQUESTED")), "subscribed anyway: " + py.lines());
        }
    }

    @Test
    void withoutTlsCaFileTheJdkTrustStoreRefusesASelfSignedServer() throws Exception {
        try (PythonFixture py = new PythonFixture("--tls", server[0], server[1], "rows", "10")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            ConnectionLostException e = assertThrows(ConnectionLostException.class,
                    () -> open(ep, tls(new TlsSettings(null, null, null, null))));
            assertTrue(e.getMessage().contains("does not trust the server's certificate"), e.getMessage());
            assertTrue(e.getMessage().contains("the JDK's default trust store"), e.getMessage());
            assertNoToken(ep, e);
        }
    }

    @Test
    void aCertificateThatDoesNotNameTheHostIsRefusedAndTlsHostnameNamesTheOneItLists() throws Exception {
        try (PythonFixture py = new PythonFixture("--tls", named[0], named[1], "rows", "20")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            ConnectionLostException e = assertThrows(ConnectionLostException.class,
                    () -> open(ep, tls(new TlsSettings(named[0], null, null, null))));
            assertTrue(e.getMessage().startsWith("TLS with " + ep.base() + " failed: the server's certificate does not "
                    + "name '127.0.0.1'"), e.getMessage());
            assertTrue(e.getMessage().contains("option tlsHostname"), e.getMessage());
            assertNoToken(ep, e);
            ConnectionLostException wrong = assertThrows(ConnectionLostException.class,
                    () -> open(ep, tls(new TlsSettings(named[0], null, null, "elsewhere.test"))));
            assertTrue(wrong.getMessage().contains("does not name 'elsewhere.test'"), wrong.getMessage());

            StreamReader<long[]> r = open(ep, tls(new TlsSettings(named[0], null, null, "rs-spark.test")));
            assertEquals(range(0, 20), take(r, 20));
            r.detach();
        }
    }

    @Test
    void aServerThatAsksForAClientCertificateReadsTheOneOfTlsCertFile() throws Exception {
        try (PythonFixture py = new PythonFixture("--tls", server[0], server[1], "--client-ca", client[0], "rows", "20")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            StreamReader<long[]> r = open(ep, tls(new TlsSettings(server[0], client[0], client[1], null)));
            assertEquals(range(0, 20), take(r, 20));
            r.detach();
            // Without one the server ends the connection (TLS 1.3: after the client's side of the handshake).
            IOException e = assertThrows(IOException.class, () -> {
                StreamReader<long[]> none = open(ep, tls(new TlsSettings(server[0], null, null, null)));
                none.poll(TimeUnit.SECONDS.toNanos(30));
            });
            assertTrue(e.getMessage().contains(ep.base()), e.getMessage());
            assertNoToken(ep, e);
        }
    }

    @Test
    void aTlsClientOfAPlainTcpServerFailsAskingWhetherItServesTls() throws Exception {
        try (PythonFixture py = new PythonFixture("rows", "10")) {
            Endpoint plain = Endpoint.parse(py.address(), null);
            Endpoint ep = Endpoint.parse(py.address().replace("tcp://", "tls://"), null);
            assertEquals(plain.port, ep.port);
            ConnectionLostException e = assertThrows(ConnectionLostException.class,
                    () -> open(ep, tls(new TlsSettings(server[0], null, null, null))));
            assertTrue(e.getMessage().contains("is " + ep.base() + " serving TLS"), e.getMessage());
            assertNoToken(ep, e);
        }
    }

    @Test
    void readsEveryRowOverAUnixSocket() throws Exception {
        Path sock = Files.createTempDirectory("rs-unix").resolve("fixture.sock");
        try (PythonFixture py = new PythonFixture("--bind", "unix://" + sock, "rows", "30")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            assertEquals("unix", ep.scheme);
            assertEquals(sock.toString(), ep.path);
            assertEquals("fixture", ep.name);
            StreamReader<long[]> r = open(ep, settings(8));
            assertEquals(range(0, 30), take(r, 30));
            assertNull(r.poll(TimeUnit.SECONDS.toNanos(30)));
            assertTrue(r.isComplete());
            r.detach();
        }
    }

    @Test
    void aThreadWithItsInterruptFlagSetStillCancelsAStreamOverAUnixSocket() throws Exception {
        Path sock = Files.createTempDirectory("rs-unix").resolve("fixture.sock");
        try (PythonFixture py = new PythonFixture("--bind", "unix://" + sock, "endless")) {
            StreamReader<long[]> r = open(Endpoint.parse(py.address(), null), settings(8));
            assertEquals(range(0, 4), take(r, 4));
            Thread.currentThread().interrupt(); // as Spark interrupts a task it stops
            try {
                r.cancel();
            } finally {
                assertTrue(Thread.interrupted(), "the interrupt flag was lost");
            }
            py.await(l -> l.equals("CANCELLED"), "the publisher cancelled");
        }
    }

    @Test
    void aUnixSocketNobodyServesFailsNamingItsPath() throws Exception {
        Path sock = Files.createTempDirectory("rs-unix").resolve("nobody.sock");
        Endpoint ep = Endpoint.parse("unix://" + sock + "/x?token=secret-unix", null);
        ConnectionLostException e = assertThrows(ConnectionLostException.class, () -> open(ep, settings(8)));
        assertTrue(e.getMessage().startsWith("could not connect to unix://" + sock), e.getMessage());
        assertNoToken(ep, e);
    }

    @Test
    void aKeyInTheTraditionalEcFormIsRefusedSayingHowToConvertIt() throws Exception {
        String sec1 = new TestCertificates(dir).traditionalEc(client[1]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new TlsSettings(server[0], client[0], sec1, null).context());
        assertTrue(e.getMessage().contains("option tlsKeyFile='" + sec1 + "' holds a '-----BEGIN EC PRIVATE KEY-----' key"),
                e.getMessage());
        assertTrue(e.getMessage().contains("openssl pkey -in KEY.pem -out KEY-pkcs8.pem"), e.getMessage());
    }

    @Test
    void aCertificateAndItsKeyInOneFileAreRead() throws Exception {
        Path both = dir.resolve("both.pem");
        Files.writeString(both, Files.readString(Path.of(client[0])) + Files.readString(Path.of(client[1])));
        assertNotNull(new TlsSettings(null, both.toString(), null, null).context());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new TlsSettings(null, client[0], null, null).context());
        assertTrue(e.getMessage().contains("holds no PEM private key"), e.getMessage());
        assertTrue(e.getMessage().contains("option tlsKeyFile"), e.getMessage());
    }

    @Test
    void aTlsCaFileWithoutACertificateOrMissingIsRefusedNamingTheOption() {
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> new TlsSettings(dir.resolve("absent.pem").toString(), null, null, null).context());
        assertTrue(missing.getMessage().contains("option tlsCaFile='" + dir.resolve("absent.pem") + "' cannot be read"),
                missing.getMessage());
        IllegalArgumentException keyOnly = assertThrows(IllegalArgumentException.class,
                () -> new TlsSettings(client[1], null, null, null).context());
        assertTrue(keyOnly.getMessage().contains("holds no PEM certificate"), keyOnly.getMessage());
    }
}
