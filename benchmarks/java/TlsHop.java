import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

import rsspark.rsocket.TlsSettings;

/**
 * The JVM's side of benchmarks/tls_hop.py: round trips of one small message from the JDK's
 * {@code SSLSocket} (made as the shim's {@code Transport} makes it: the shim's TlsSettings,
 * TCP_NODELAY, host-name verification) or a plain {@code Socket}, to the Python echo server.
 *
 * <p>Arguments: port, kind ("tls" or "tcp"), CA file, messages, size. Prints "p50 p99" in microseconds
 * (the first 10% not counted) and the TLS cipher suite.
 */
public final class TlsHop {
    public static void main(String[] a) throws Exception {
        int port = Integer.parseInt(a[0]);
        boolean tls = a[1].equals("tls");
        int messages = Integer.parseInt(a[3]);
        int size = Integer.parseInt(a[4]);
        Socket raw = new Socket();
        raw.setTcpNoDelay(true);
        raw.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
        Socket s = raw;
        String suite = "-";
        if (tls) {
            Map<String, String> o = new HashMap<>();
            o.put("tlscafile", a[2]);
            SSLSocket t = (SSLSocket) TlsSettings.from(o).context().getSocketFactory().createSocket(raw, "127.0.0.1", port, true);
            SSLParameters p = t.getSSLParameters();
            p.setEndpointIdentificationAlgorithm("HTTPS");
            t.setSSLParameters(p);
            t.startHandshake();
            suite = t.getSession().getProtocol() + " " + t.getSession().getCipherSuite();
            s = t;
        }
        InputStream in = s.getInputStream();
        OutputStream out = s.getOutputStream();
        byte[] msg = new byte[size];
        Arrays.fill(msg, (byte) 'x');
        byte[] buf = new byte[4096];
        long[] rtts = new long[messages];
        for (int i = 0; i < messages; i++) {
            long t0 = System.nanoTime();
            out.write(msg);
            out.flush();
            int got = 0;
            while (got < size) {
                int n = in.read(buf);
                if (n < 0) throw new java.io.EOFException("the echo server closed");
                got += n;
            }
            rtts[i] = System.nanoTime() - t0;
        }
        s.close();
        long[] kept = Arrays.copyOfRange(rtts, messages / 10, messages);
        Arrays.sort(kept);
        System.out.printf("%.1f %.1f %s%n", kept[kept.length / 2] / 1000.0, kept[(int) (kept.length * 0.99)] / 1000.0, suite);
    }
}
