package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;
import static rsspark.rsocket.ClientAgainstPythonServerTest.IDS;
import static rsspark.rsocket.ClientAgainstPythonServerTest.range;
import static rsspark.rsocket.ClientAgainstPythonServerTest.take;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Network outages between the Java reader ({@link StreamReader}, what a reactive-rt task reads with)
 * and the Python server, made by a real relay ({@link FaultRelay}): the reader resumes for as long as
 * the server keeps the stream (the window it states), with capped backoff; nothing is lost or read twice;
 * beyond the window it fails saying so. Durations scaled down: keepalive lifetime 1 s.
 */
class OutageTest {
    static StreamReader.Settings fast(double windowSeconds) {
        StreamReader.Settings s = ClientAgainstPythonServerTest.settings(16);
        s.connection.keepaliveMs = 200;
        s.connection.lifetimeMs = 1000;
        s.connection.connectTimeoutMs = 1000;
        s.windowSeconds = windowSeconds;
        s.backoffFirstMs = 50;
        s.backoffMaxMs = 500;
        return s;
    }

    /** Poll for {@code millis} while the outage lasts (rows already in flight still arrive): nothing fails. */
    static void rideFor(StreamReader<long[]> r, long millis, List<Long> into) throws IOException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() < end) {
            long[] ids = r.poll(TimeUnit.MILLISECONDS.toNanos(100));
            if (ids != null) for (long id : ids) into.add(id);
        }
    }

    @Test
    void theBackoffDoublesUpToItsCapWithTheUpperHalfOfEachStepJittered() {
        long[][] table = { // first, max, attempt, u*1000 -> ms (as tests/net/test_outage.py's table)
            {100, 10_000, 0, 0, 50}, {100, 10_000, 1, 0, 100}, {100, 10_000, 3, 500, 600},
            {100, 10_000, 6, 0, 3200}, {100, 10_000, 7, 0, 5000}, {100, 10_000, 500, 1000, 10_000}, {1000, 1000, 9, 0, 500}};
        for (long[] t : table) assertEquals(t[4], Outage.backoffMs(t[0], t[1], (int) t[2], t[3] / 1000.0), java.util.Arrays.toString(t));
        assertEquals(40_000, Outage.boundMs(30_000, 300, 10_000)); // the server's word wins
        assertEquals(310_000, Outage.boundMs(-1, 300, 10_000));
        assertEquals(Outage.DEFAULT_WINDOW_MS + 10_000, Outage.boundMs(-1, 0, 10_000));
    }

    @Test
    void aReaderRidesOutABlackHoleAndAResetLongerThanItsKeepaliveLifetimeLosingNothing() throws Exception {
        try (PythonFixture py = new PythonFixture("endless"); FaultRelay relay = new FaultRelay(Endpoint.parse(py.address(), null))) {
            Endpoint ep = Endpoint.parse(relay.address(py.address()), null);
            StreamReader<long[]> r = StreamReader.open(ep, fast(0), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0);
            List<Long> got = new ArrayList<>(take(r, 20));
            assertEquals(60_000, r.statedWindowMs(), "the window the server states");
            relay.blackHole();
            rideFor(r, 3000, got); // three lifetimes: the connection is lost and tries fail
            assertNotNull(r.outage(), "the outage is visible while it lasts");
            assertTrue(r.outage().tries() >= 1, "tried to resume");
            relay.heal();
            got.addAll(take(r, 40));
            relay.reset();
            rideFor(r, 2000, got);
            relay.heal();
            got.addAll(take(r, 40));
            assertNull(r.outage());
            assertEquals(range(0, got.size()), got, "every row once, in order");
            r.cancel();
        }
    }

    @Test
    void beyondTheWindowTheReaderFailsAtTheWindowNotAtAConstantSayingTheRowsAreLost() throws Exception {
        try (PythonFixture py = new PythonFixture("endless"); FaultRelay relay = new FaultRelay(Endpoint.parse(py.address(), null))) {
            Endpoint ep = Endpoint.parse(relay.address(py.address()), null);
            StreamReader<long[]> r = StreamReader.open(ep, fast(2), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0);
            take(r, 10);
            assertEquals(2000, r.statedWindowMs(), "the window asked for, within the server's 60 s");
            relay.blackHole();
            long start = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> {
                while (true) r.poll(TimeUnit.MILLISECONDS.toNanos(100));
            });
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(e.getMessage().matches("(?s).* could not be resumed at position \\d+ within 3 s \\(the endpoint's "
                    + "window and the keepalive lifetime\\): the endpoint no longer keeps the stream.*"), e.getMessage());
            assertFalse(e.getMessage().contains(ep.token), "the token leaked into " + e.getMessage());
            assertTrue(took >= 2500 && took < 20_000, "gave up after " + took + " ms: the window, not a constant");
        }
    }

    /**
     * What a real-time task does when it opens the stream during an outage, where the last task left off:
     * it waits for the endpoint. A stream opened at position 0 that cannot be reached fails at once instead
     * (nothing was read of it: a wrong address is shown, not waited out).
     */
    @Test
    void aTaskContinuingAStreamWhoseEndpointIsUnreachableWaitsForIt() throws Exception {
        try (PythonFixture py = new PythonFixture("endless"); FaultRelay relay = new FaultRelay(Endpoint.parse(py.address(), null))) {
            Endpoint ep = Endpoint.parse(relay.address(py.address()), null);
            String key = Metadata.newKey();
            StreamReader<long[]> first = StreamReader.open(ep, fast(0), IDS, StreamReader.Mode.RESUMABLE, key, 0, 0);
            assertEquals(range(0, 10), take(first, 10));
            first.detach(); // the task ends; the next one continues at 10
            relay.reset();
            assertThrows(ConnectionLostException.class,
                    () -> StreamReader.open(ep, fast(0), IDS, StreamReader.Mode.RESUMABLE, Metadata.newKey(), 0, 0));
            StreamReader<long[]> next = StreamReader.open(ep, fast(0), IDS, StreamReader.Mode.RESUMABLE, key, 10, 10);
            List<Long> got = new ArrayList<>();
            rideFor(next, 1000, got);
            assertNotNull(next.outage());
            relay.heal();
            got.addAll(take(next, 10));
            assertEquals(range(10, 10 + got.size()), got);
            next.cancel();
        }
    }
}
