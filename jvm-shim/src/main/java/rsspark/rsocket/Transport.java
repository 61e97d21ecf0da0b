package rsspark.rsocket;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * The byte stream under a {@link Connection}: TCP, TLS over TCP (the JDK's {@link SSLSocket}, the
 * server verified: chain and host name), or a Unix domain socket (JDK 16+). Reading and writing
 * may run on two threads at once.
 */
final class Transport {
    /** What half-closes and closes the underlying socket. */
    private interface Ends {
        void shutdownOutput() throws IOException;

        void close() throws IOException;
    }

    final InputStream in;
    final OutputStream out;
    private final Ends ends;

    private Transport(InputStream in, OutputStream out, Ends ends) {
        this.in = in;
        this.out = out;
        this.ends = ends;
    }

    /**
     * Connect to {@code e} as its scheme says. Throws ConnectionLostException with the whole story
     * for TLS failures, and the socket's own IOException otherwise (the caller words it).
     */
    static Transport open(Endpoint e, Connection.Options o) throws IOException {
        switch (e.scheme) {
            case "unix":
                return unix(e);
            case "tls":
                return tls(e, o, tcp(e, o));
            default:
                Socket s = tcp(e, o);
                return new Transport(s.getInputStream(), s.getOutputStream(), new Ends() {
                    @Override
                    public void shutdownOutput() throws IOException {
                        s.shutdownOutput();
                    }

                    @Override
                    public void close() throws IOException {
                        s.close();
                    }
                });
        }
    }

    /** Send FIN (TLS: close_notify, then FIN): the peer reads EOF once it has read what came before. */
    void shutdownOutput() throws IOException {
        ends.shutdownOutput();
    }

    /** Close at once (a thread blocked reading or writing gets an IOException). */
    void close() {
        try {
            ends.close();
        } catch (IOException | RuntimeException e) {
            // nothing to do: the socket is gone either way
        }
    }

    private static Socket tcp(Endpoint e, Connection.Options o) throws IOException {
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true); // one row per payload at low rates: Nagle would add up to 40 ms
            s.setKeepAlive(true);
            s.connect(new InetSocketAddress(e.host, e.port), o.connectTimeoutMs);
            return s;
        } catch (IOException | RuntimeException ex) {
            s.close();
            throw ex;
        }
    }

    private static Transport tls(Endpoint e, Connection.Options o, Socket raw) throws IOException {
        TlsSettings t = o.tls;
        String host = t.expectedHost(e);
        SSLSocket s;
        try {
            s = (SSLSocket) t.context().getSocketFactory().createSocket(raw, host, e.port, true);
            SSLParameters p = s.getSSLParameters();
            p.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name `host`
            s.setSSLParameters(p);
            s.setSoTimeout(o.connectTimeoutMs);
            s.startHandshake();
            s.setSoTimeout(0);
        } catch (IOException | RuntimeException ex) {
            raw.close();
            if (ex instanceof SocketTimeoutException) {
                throw new ConnectionLostException("the TLS handshake with " + e.base() + " did not finish within "
                        + o.connectTimeoutMs + " ms: is it serving TLS (a tcp:// server never answers a TLS client), "
                        + "and not overloaded?", ex);
            }
            String why = "TLS with " + e.base() + " failed: " + tlsHint(e, t, host, ex);
            boolean network = ex.getCause() instanceof java.io.EOFException || ex.getCause() instanceof java.net.SocketException
                    || ex instanceof java.net.SocketException || ex instanceof java.io.EOFException;
            if (ex instanceof javax.net.ssl.SSLException && !network) throw new TlsRefusedException(why, ex); // final
            throw new ConnectionLostException(why, ex);
        }
        return new Transport(s.getInputStream(), s.getOutputStream(), new Ends() {
            @Override
            public void shutdownOutput() throws IOException {
                s.shutdownOutput(); // close_notify, then FIN
            }

            @Override
            public void close() throws IOException {
                raw.close(); // first: unblocks a writer holding the SSLSocket's locks, so close() cannot hang
                s.close();
            }
        });
    }

    /** What went wrong in a TLS handshake, and what to do (never the token: it is not in {@code e.base()}). */
    static String tlsHint(Endpoint e, TlsSettings t, String host, Exception ex) {
        String what = ex.getMessage();
        for (Throwable c = ex; c != null; c = c.getCause()) {
            if (c instanceof CertPathBuilderException || c instanceof CertPathValidatorException
                    || String.valueOf(c.getMessage()).startsWith("PKIX path")) {
                return "this client does not trust the server's certificate (" + what + "): give option "
                        + TlsSettings.CA_FILE + ", the PEM file of the server's certificate or of the CA that signed it"
                        + (t.caFile == null ? " (without it the JDK's default trust store is used)"
                                : " (now it is '" + t.caFile + "', which does not hold them)");
            }
        }
        for (Throwable c = ex; c != null; c = c.getCause()) {
            if (c instanceof CertificateException && String.valueOf(c.getMessage()).contains("matching")) {
                return "the server's certificate does not name '" + host + "' (" + c.getMessage() + "): connect by a "
                        + "name the certificate lists, or give that name as option " + TlsSettings.HOSTNAME;
            }
        }
        if (ex instanceof IllegalArgumentException) return what; // the TLS options: says which and why
        return what + ": is " + e.base() + " serving TLS (a tcp:// server cannot answer a TLS client), and does it "
                + "accept this client" + (t.certFile == null ? " (it may ask for a client certificate: option "
                + TlsSettings.CERT_FILE + ")" : "'s certificate " + TlsSettings.CERT_FILE + "='" + t.certFile + "'") + "?";
    }

    private static Transport unix(Endpoint e) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            ch.connect(UnixDomainSocketAddress.of(e.path));
        } catch (IOException | RuntimeException ex) {
            ch.close();
            throw ex;
        }
        return new Transport(new ChannelIn(ch), new ChannelOut(ch), new Ends() {
            @Override
            public void shutdownOutput() throws IOException {
                ch.shutdownOutput();
            }

            @Override
            public void close() throws IOException {
                ch.close();
            }
        });
    }

    /**
     * Reads a blocking channel directly. Not {@code Channels.newInputStream}: in JDK 17 its streams
     * lock the channel's blocking lock for a whole read, so a write from another thread would wait
     * for the next byte to arrive.
     */
    private static final class ChannelIn extends InputStream {
        private final SocketChannel ch;

        ChannelIn(SocketChannel ch) {
            this.ch = ch;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) return 0;
            return ch.read(ByteBuffer.wrap(b, off, len));
        }
    }

    /** Writes a blocking channel directly (see {@link ChannelIn}). */
    private static final class ChannelOut extends OutputStream {
        private final SocketChannel ch;

        ChannelOut(SocketChannel ch) {
            this.ch = ch;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        /**
         * Writes even from a thread whose interrupt flag is set (the flag is restored after): an
         * interrupted channel operation closes the channel, and Spark interrupts a task that it
         * stops while the task still sends its last frame (CANCEL). Plain sockets ignore the flag too.
         */
        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            boolean interrupted = Thread.interrupted();
            try {
                ByteBuffer bb = ByteBuffer.wrap(b, off, len);
                while (bb.hasRemaining()) ch.write(bb);
            } finally {
                if (interrupted) Thread.currentThread().interrupt();
            }
        }
    }
}
