package rsspark.rsocket;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A TCP relay on 127.0.0.1 in front of a server that fails as a network does (the Java twin of
 * tests/faultrelay.py): {@link #blackHole} (nothing passes either way, nothing is reset; new
 * connections are accepted and hear nothing), {@link #reset} (every connection reset, new ones reset
 * at once), {@link #heal}.
 */
public final class FaultRelay implements AutoCloseable {
    private enum Mode { PASS, BLACK_HOLE, RESET }

    private final InetSocketAddress target;
    private final ServerSocket listener;
    private final List<Socket[]> pairs = new ArrayList<>();
    private final List<Socket> held = new ArrayList<>();
    private Mode mode = Mode.PASS;
    private boolean closed;

    public FaultRelay(Endpoint target) throws IOException {
        this.target = new InetSocketAddress(target.host, target.port);
        this.listener = new ServerSocket(0, 256, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "fault-relay accept");
        t.setDaemon(true);
        t.start();
    }

    /** {@code address} (of the target, with its token) with the relay's port instead. */
    public String address(String address) {
        return address.replaceFirst(":" + target.getPort() + "/", ":" + listener.getLocalPort() + "/");
    }

    public synchronized void blackHole() {
        mode = Mode.BLACK_HOLE;
        notifyAll();
    }

    public void reset() {
        List<Socket> toReset = new ArrayList<>();
        synchronized (this) {
            mode = Mode.RESET;
            for (Socket[] p : pairs) toReset.addAll(List.of(p));
            pairs.clear();
            toReset.addAll(held);
            held.clear();
            notifyAll();
        }
        for (Socket s : toReset) rst(s);
    }

    public void heal() {
        List<Socket> stale;
        synchronized (this) {
            mode = Mode.PASS;
            stale = new ArrayList<>(held);
            held.clear();
            notifyAll();
        }
        for (Socket s : stale) rst(s); // their clients gave up on them during the hole
    }

    @Override
    public void close() throws IOException {
        List<Socket> all = new ArrayList<>();
        synchronized (this) {
            closed = true;
            mode = Mode.PASS;
            for (Socket[] p : pairs) all.addAll(List.of(p));
            all.addAll(held);
            pairs.clear();
            held.clear();
            notifyAll();
        }
        listener.close();
        for (Socket s : all) s.close();
    }

    private static void rst(Socket s) {
        try {
            s.setSoLinger(true, 0);
            s.close();
        } catch (IOException e) {
            // gone already
        }
    }

    private void acceptLoop() {
        while (true) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return;
            }
            Mode m;
            synchronized (this) {
                m = mode;
                if (m == Mode.BLACK_HOLE) {
                    held.add(client);
                    continue;
                }
            }
            if (m == Mode.RESET) {
                rst(client);
                continue;
            }
            Socket up;
            try {
                up = new Socket();
                up.connect(target, 5000);
            } catch (IOException e) {
                rst(client);
                continue;
            }
            Socket[] pair = {client, up};
            synchronized (this) {
                pairs.add(pair);
            }
            pump(pair, client, up);
            pump(pair, up, client);
        }
    }

    private void pump(Socket[] pair, Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            try (InputStream in = from.getInputStream()) {
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buf)) > 0) {
                    synchronized (this) { // in a black hole what was read waits here, as on a dead link
                        while (mode == Mode.BLACK_HOLE && !closed) wait(500);
                        if (mode == Mode.RESET) return;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
                from.shutdownInput();
                to.shutdownOutput();
            } catch (IOException | InterruptedException e) {
                // reset or closed
            }
        }, "fault-relay pump");
        t.setDaemon(true);
        t.start();
    }
}
