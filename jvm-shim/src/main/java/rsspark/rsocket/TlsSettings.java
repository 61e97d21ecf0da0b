package rsspark.rsocket;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * How a {@code tls://} connection trusts its server and, optionally, proves who it is: the options
 * {@value #CA_FILE}, {@value #CERT_FILE}, {@value #KEY_FILE} and {@value #HOSTNAME} (the same in the
 * real-time source and sink). The server is always verified: its certificate chain against the
 * certificates of {@value #CA_FILE} (PEM; else the JDK's default trust store), and its host name
 * (the address's host, or {@value #HOSTNAME}) against the names the certificate lists. The files
 * are read where the connection is opened (the driver and every executor), once per JVM.
 */
public final class TlsSettings implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String CA_FILE = "tlsCaFile";
    public static final String CERT_FILE = "tlsCertFile";
    public static final String KEY_FILE = "tlsKeyFile";
    public static final String HOSTNAME = "tlsHostname";

    /** Each option and what it does, for option lists and documentation. */
    public static final Map<String, String> OPTIONS;

    static {
        Map<String, String> o = new java.util.LinkedHashMap<>();
        o.put(CA_FILE, "tls:// endpoints: PEM file of the certificates (the server's own, or the CA that signed "
                + "it) the server's certificate is verified against (default: the JDK's trust store)");
        o.put(CERT_FILE, "tls:// endpoints: PEM file of this client's certificate (chain), for a server that "
                + "asks for one");
        o.put(KEY_FILE, "tls:// endpoints: PEM file of tlsCertFile's private key (PKCS#8, unencrypted; "
                + "default: the key in tlsCertFile)");
        o.put(HOSTNAME, "tls:// endpoints: the name the server's certificate must list (default: the "
                + "endpoint's host)");
        OPTIONS = java.util.Collections.unmodifiableMap(o);
    }

    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\\s]*)-----END \\1-----");
    private static final String CONVERT = "convert it with: openssl pkey -in KEY.pem -out KEY-pkcs8.pem";

    public final String caFile; // null: the JDK's trust store
    public final String certFile; // null: no client certificate
    public final String keyFile; // null: the key is in certFile
    public final String hostname; // null: the endpoint's host
    private transient volatile SSLContext context;

    public TlsSettings(String caFile, String certFile, String keyFile, String hostname) {
        this.caFile = blankToNull(caFile);
        this.certFile = blankToNull(certFile);
        this.keyFile = blankToNull(keyFile);
        this.hostname = blankToNull(hostname);
        if (this.keyFile != null && this.certFile == null) {
            throw new IllegalArgumentException("option " + KEY_FILE + " is the key of a client certificate: give "
                    + "option " + CERT_FILE + " (the certificate's PEM file) too");
        }
    }

    /** The TLS options among {@code options} (keys lower-cased); empty settings when none is given. */
    public static TlsSettings from(Map<String, String> options) {
        return new TlsSettings(options.get(CA_FILE.toLowerCase(Locale.ROOT)), options.get(CERT_FILE.toLowerCase(Locale.ROOT)),
                options.get(KEY_FILE.toLowerCase(Locale.ROOT)), options.get(HOSTNAME.toLowerCase(Locale.ROOT)));
    }

    /** Whether no option was given (a tls:// endpoint is then verified against the JDK's trust store). */
    public boolean isDefault() {
        return caFile == null && certFile == null && hostname == null;
    }

    /**
     * Refuse TLS options for an endpoint that is not {@code tls://}: they would be ignored, and the
     * user meant the connection to be encrypted.
     */
    public void checkUsedBy(Endpoint endpoint) {
        if (isDefault() || endpoint.scheme.equals("tls")) return;
        String given = caFile != null ? CA_FILE : certFile != null ? CERT_FILE : HOSTNAME;
        throw new IllegalArgumentException("option " + given + " applies to tls:// endpoints, but the endpoint is "
                + endpoint + ": serve it on tls:// and give that address (or drop the TLS options)");
    }

    /** The name the server's certificate must list for {@code endpoint}. */
    String expectedHost(Endpoint endpoint) {
        return hostname != null ? hostname : endpoint.host;
    }

    /** The SSLContext of these settings, built once (throws IllegalArgumentException naming the option and file). */
    public SSLContext context() {
        SSLContext c = context;
        if (c == null) {
            synchronized (this) {
                c = context;
                if (c == null) context = c = build();
            }
        }
        return c;
    }

    private SSLContext build() {
        try {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            if (caFile == null) {
                tmf.init((KeyStore) null); // the JDK's default trust store
            } else {
                KeyStore trust = emptyStore();
                List<X509Certificate> cas = certificates(CA_FILE, caFile);
                for (int i = 0; i < cas.size(); i++) trust.setCertificateEntry("ca-" + i, cas.get(i));
                tmf.init(trust);
            }
            KeyManagerFactory kmf = null;
            if (certFile != null) {
                List<X509Certificate> chain = certificates(CERT_FILE, certFile);
                PrivateKey key = privateKey(keyFile != null ? KEY_FILE : CERT_FILE, keyFile != null ? keyFile : certFile);
                KeyStore keys = emptyStore();
                char[] none = new char[0];
                keys.setKeyEntry("client", key, none, chain.toArray(new Certificate[0]));
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(keys, none);
            }
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return ctx;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalArgumentException("the TLS options cannot be used: " + e.getMessage(), e);
        }
    }

    private static KeyStore emptyStore() throws GeneralSecurityException, IOException {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        return ks;
    }

    /** Every {@code CERTIFICATE} block of PEM file {@code file} (option {@code option}): at least one. */
    static List<X509Certificate> certificates(String option, String file) {
        CertificateFactory cf;
        try {
            cf = CertificateFactory.getInstance("X.509");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JVM has no X.509 certificate factory", e);
        }
        List<X509Certificate> out = new ArrayList<>();
        Matcher m = PEM.matcher(read(option, file));
        while (m.find()) {
            if (!m.group(1).equals("CERTIFICATE")) continue;
            try {
                out.add((X509Certificate) cf.generateCertificate(new java.io.ByteArrayInputStream(decode(option, file, m))));
            } catch (GeneralSecurityException e) {
                throw new IllegalArgumentException("option " + option + "='" + file + "': a certificate in it cannot be "
                        + "read (" + e.getMessage() + "); give a PEM file of X.509 certificates", e);
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("option " + option + "='" + file + "' holds no PEM certificate "
                    + "('-----BEGIN CERTIFICATE-----'); give a PEM file of X.509 certificates");
        }
        return out;
    }

    /** The private key in PEM file {@code file}: PKCS#8 ({@code BEGIN PRIVATE KEY}), RSA, EC or EdDSA. */
    static PrivateKey privateKey(String option, String file) {
        Matcher m = PEM.matcher(read(option, file));
        while (m.find()) {
            String type = m.group(1);
            if (type.equals("PRIVATE KEY")) return pkcs8(option, file, decode(option, file, m));
            if (type.endsWith("PRIVATE KEY")) {
                throw new IllegalArgumentException("option " + option + "='" + file + "' holds a '-----BEGIN " + type
                        + "-----' key; the JVM client reads unencrypted PKCS#8 keys ('-----BEGIN PRIVATE KEY-----'): "
                        + CONVERT);
            }
        }
        throw new IllegalArgumentException("option " + option + "='" + file + "' holds no PEM private key "
                + "('-----BEGIN PRIVATE KEY-----')" + (option.equals(CERT_FILE) ? "; give the key's file as option "
                + KEY_FILE : ""));
    }

    private static PrivateKey pkcs8(String option, String file, byte[] der) {
        for (String algorithm : new String[] {"RSA", "EC", "EdDSA", "RSASSA-PSS"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // not this algorithm: try the next
            }
        }
        throw new IllegalArgumentException("option " + option + "='" + file + "': its PKCS#8 key is none of RSA, EC "
                + "or EdDSA, or is damaged; " + CONVERT);
    }

    private static String read(String option, String file) {
        try {
            return Files.readString(Path.of(file), StandardCharsets.US_ASCII);
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("option " + option + "='" + file + "' cannot be read (" + e
                    + "); give the path of a PEM file readable on the driver and every executor", e);
        }
    }

    private static byte[] decode(String option, String file, Matcher m) {
        try {
            return Base64.getMimeDecoder().decode(m.group(2).replaceAll("\\s", ""));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("option " + option + "='" + file + "': its '" + m.group(1)
                    + "' block is not valid base64", e);
        }
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }
}
