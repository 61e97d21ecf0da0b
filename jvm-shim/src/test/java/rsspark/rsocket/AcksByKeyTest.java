package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The driver's acknowledgements of {@code reactive-rt} (rsspark.rt.DriverAcks) on the wire, against
 * the Python server: on a connection of their own (SETUP with the endpoint's token), naming the
 * stream's key ({@link Metadata#commitOf}), while the stream's own connection reads on.
 */
class AcksByKeyTest {
    private static Connection ackConnection(Endpoint ep, CompletableFuture<IOException> closed) throws IOException {
        Connection.Options o = new Connection.Options();
        Connection c = Connection.dial(ep, o, new Connection.Listener() {
            @Override
            public void onFrame(Frame frame) {}

            @Override
            public void onClosed(IOException why) {
                closed.complete(why);
            }
        });
        c.send(Frames.setup(o.keepaliveMs, o.lifetimeMs, Metadata.COMPOSITE, Metadata.ARROW_MIME,
                Metadata.setup(ep.token, List.of()), null));
        c.start();
        return c;
    }

    @Test
    void anAcknowledgementNamingTheKeyOnAnotherConnectionReachesThePublisher() throws Exception {
        try (PythonFixture py = new PythonFixture("endless")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            String key = Metadata.newKey();
            StreamReader<long[]> r = StreamReader.open(ep, ClientAgainstPythonServerTest.settings(16),
                    ClientAgainstPythonServerTest.IDS, StreamReader.Mode.RESUMABLE, key, 0, 0);
            ClientAgainstPythonServerTest.take(r, 20);
            CompletableFuture<IOException> closed = new CompletableFuture<>();
            Connection c = ackConnection(ep, closed);
            c.send(Frames.metadataPush(Metadata.commitOf(key, 15)));
            py.await(l -> l.equals("COMMITTED 15"), "the acknowledgement at the publisher");
            c.send(Frames.metadataPush(Metadata.commitOf(key, 18))); // the same connection, batch after batch
            py.await(l -> l.equals("COMMITTED 18"), "the next acknowledgement at the publisher");
            assertFalse(closed.isDone(), "the acknowledgement connection closed");
            assertEquals(ClientAgainstPythonServerTest.range(20, 25), ClientAgainstPythonServerTest.take(r, 5));
            c.close(null);
            r.cancel();
        }
    }

    @Test
    void anAcknowledgementBeyondWhatTheStreamSentIsRefusedSayingSo() throws Exception {
        try (PythonFixture py = new PythonFixture("endless")) {
            Endpoint ep = Endpoint.parse(py.address(), null);
            String key = Metadata.newKey();
            StreamReader<long[]> r = StreamReader.open(ep, ClientAgainstPythonServerTest.settings(16),
                    ClientAgainstPythonServerTest.IDS, StreamReader.Mode.RESUMABLE, key, 0, 0);
            ClientAgainstPythonServerTest.take(r, 10);
            CompletableFuture<IOException> closed = new CompletableFuture<>();
            Connection c = ackConnection(ep, closed);
            c.send(Frames.metadataPush(Metadata.commitOf(key, 1_000_000)));
            IOException why = closed.get(30, TimeUnit.SECONDS);
            assertNotNull(why);
            assertTrue(why.getMessage().contains("acknowledged position 1000000 is beyond"), why.getMessage());
            assertTrue(py.lines().stream().noneMatch(l -> l.startsWith("COMMITTED")), py.lines().toString());
            r.cancel();
        }
    }
}
