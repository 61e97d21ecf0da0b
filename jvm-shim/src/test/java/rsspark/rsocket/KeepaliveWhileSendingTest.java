package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A client that sends without pause to a server that has nothing to send but its answers to the
 * client's keepalives (the delivery hub while its credit lasts, for the real-time sink). The client
 * skipped its keepalive while it was sending, heard nothing, and closed the connection after the
 * lifetime while its frames flowed (benchmarks/latency.py: every real-time run lost its epoch).
 */
class KeepaliveWhileSendingTest {

    @Test
    void aClientSendingWithoutPauseStillAsksForKeepalivesAndOutlivesItsLifetime() throws Exception {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread echo = new Thread(() -> answerKeepalivesOnly(server), "keepalive-only server");
            echo.setDaemon(true);
            echo.start();
            Endpoint ep = Endpoint.parse("tcp://127.0.0.1:" + server.getLocalPort() + "/rows", null);
            Connection.Options o = new Connection.Options();
            o.keepaliveMs = 100;
            o.lifetimeMs = 500;
            Connection c = Connection.dial(ep, o, IgnoringListener.INSTANCE);
            try {
                c.start();
                byte[] row = new byte[64];
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(4 * o.lifetimeMs);
                while (System.nanoTime() < end && !c.isClosed()) {
                    c.send(Frames.payloadHeader(1, true, false), row, 0, row.length); // never a pause of a keepalive interval
                }
                assertFalse(c.isClosed(), "closed while sending: " + c.closedWith());
            } finally {
                c.close();
            }
        }
    }

    /** Read every frame; answer a KEEPALIVE that asks for it, and send nothing else. */
    private static void answerKeepalivesOnly(ServerSocket server) {
        try (Socket s = server.accept()) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                int len = (in.readUnsignedByte() << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
                byte[] f = new byte[len];
                in.readFully(f);
                int typeFlags = ((f[4] & 0xff) << 8) | (f[5] & 0xff);
                if ((typeFlags >>> 10) == Frames.KEEPALIVE && (typeFlags & Frames.FLAG_RESPOND) != 0) {
                    byte[] answer = Frames.keepalive(false, new byte[0]);
                    out.write(new byte[] {(byte) (answer.length >>> 16), (byte) (answer.length >>> 8), (byte) answer.length});
                    out.write(answer);
                    out.flush();
                }
            }
        } catch (IOException e) {
            // the client closed: the test is over
        }
    }
}
