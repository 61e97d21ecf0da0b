package rsspark.rt;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

import rsspark.rsocket.Frame;
import rsspark.rsocket.Frames;

/**
 * A peer on a real socket that the test scripts: it accepts one connection, records every frame
 * the client sends, and sends what the test tells it to, when it tells it to.
 */
final class ScriptedHub implements AutoCloseable {
    private final ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    private final List<Frame> received = new ArrayList<>();
    private Socket socket;
    private boolean ended;

    ScriptedHub() throws IOException {
        Thread t = new Thread(this::run, "scripted-hub");
        t.setDaemon(true);
        t.start();
    }

    String address() {
        return "tcp://127.0.0.1:" + server.getLocalPort() + "/hub?token=SECRET";
    }

    private void run() {
        try {
            Socket s = server.accept();
            synchronized (this) {
                socket = s;
                notifyAll();
            }
            DataInputStream in = new DataInputStream(s.getInputStream());
            while (true) {
                int len = (in.readUnsignedByte() << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
                byte[] buf = new byte[len];
                in.readFully(buf);
                Frame f = Frames.decode(buf, len);
                synchronized (this) {
                    received.add(f);
                    notifyAll();
                }
            }
        } catch (IOException e) {
            synchronized (this) {
                ended = true;
                notifyAll();
            }
        }
    }

    /** Send one frame (its length prefix added), once the client connected. */
    void send(byte[] frame) throws IOException, InterruptedException {
        Socket s;
        synchronized (this) {
            long deadline = System.currentTimeMillis() + 30_000;
            while (socket == null && System.currentTimeMillis() < deadline) wait(1000);
            s = socket;
        }
        if (s == null) throw new AssertionError("the client never connected");
        OutputStream out = s.getOutputStream();
        out.write(new byte[] {(byte) (frame.length >>> 16), (byte) (frame.length >>> 8), (byte) frame.length});
        out.write(frame);
        out.flush();
    }

    /** The frames received so far, once {@code until} holds for them (up to 30 s). */
    synchronized List<Frame> await(Predicate<List<Frame>> until, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (!until.test(received)) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0 || ended) {
                if (until.test(received)) break;
                throw new AssertionError("the client did not send " + what + "; frames so far: " + describe(received));
            }
            wait(left);
        }
        return new ArrayList<>(received);
    }

    static List<Frame> ofType(List<Frame> frames, int type) {
        List<Frame> out = new ArrayList<>();
        for (Frame f : frames) if (f.type() == type) out.add(f);
        return out;
    }

    private static String describe(List<Frame> frames) {
        StringBuilder b = new StringBuilder();
        for (Frame f : frames) b.append(f.type()).append('@').append(f.streamId()).append(' ');
        return b.toString();
    }

    @Override
    public void close() throws IOException {
        server.close();
        synchronized (this) {
            if (socket != null) socket.close();
        }
    }
}
