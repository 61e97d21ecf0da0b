package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A server that refuses the connection (ERROR, as the Python server does for a wrong token) while the
 * client is still writing: the client's reader closes the socket under the write, and the write must
 * report the server's reason, not "Socket closed" (CI saw exactly that for a wrong token).
 */
class RefusalDuringAWriteTest {

    @Test
    void aWriteCutShortByTheServersErrorReportsTheServersReasonAndCode() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        try (ServerSocket server = new ServerSocket()) {
            server.setReceiveBufferSize(4096);
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread refuser = new Thread(() -> refuseAfterTheFirstFrame(server, done), "refusing server");
            refuser.setDaemon(true);
            refuser.start();
            Endpoint ep = Endpoint.parse("tcp://127.0.0.1:" + server.getLocalPort() + "/rows", null);
            Connection c = Connection.dial(ep, new Connection.Options(), IgnoringListener.INSTANCE);
            try {
                c.start();
                c.send(Frames.keepalive(false, new byte[0]));
                // Far more than the two socket buffers hold: the server reads none of it, so this write
                // is still blocked when the reader takes the ERROR and closes the socket.
                byte[] big = new byte[4 * 1024 * 1024];
                IOException e = assertThrows(IOException.class, () -> c.send(Frames.payloadHeader(1, true, false), big, 0, big.length));
                assertInstanceOf(RemoteException.class, e, e.toString());
                assertEquals(Frames.REJECTED_SETUP, ((RemoteException) e).code);
                assertTrue(e.getMessage().contains("wrong token"), e.getMessage());
                IOException later = assertThrows(IOException.class, () -> c.send(Frames.keepalive(false, new byte[0])));
                assertInstanceOf(RemoteException.class, later, later.toString());
            } finally {
                c.close();
                done.countDown();
            }
        }
    }

    private static void refuseAfterTheFirstFrame(ServerSocket server, CountDownLatch done) {
        try (Socket s = server.accept()) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            int len = (in.readUnsignedByte() << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
            in.readFully(new byte[len]);
            byte[] error = Frames.error(0, Frames.REJECTED_SETUP, "wrong token: the connection is refused");
            OutputStream out = s.getOutputStream();
            out.write(new byte[] {(byte) (error.length >>> 16), (byte) (error.length >>> 8), (byte) error.length});
            out.write(error);
            out.flush();
            done.await(60, TimeUnit.SECONDS); // read nothing more: the client's big write stays blocked
        } catch (IOException | InterruptedException e) {
            // the test's assertions say what went wrong
        }
    }
}
