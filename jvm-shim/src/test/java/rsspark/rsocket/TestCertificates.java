package rsspark.rsocket;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Throwaway certificates made with openssl (as tests/net/conftest.py makes the Python tests'):
 * self-signed EC P-256, their keys PKCS#8 PEM ({@code BEGIN PRIVATE KEY}).
 */
final class TestCertificates {
    final Path dir;

    TestCertificates(Path dir) {
        this.dir = dir;
    }

    static boolean opensslAvailable() {
        try {
            return new ProcessBuilder("openssl", "version").redirectErrorStream(true).start().waitFor() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** {@code NAME.pem} and {@code NAME.key}, a certificate for {@code cn} listing {@code san} (e.g. "IP:127.0.0.1,DNS:localhost"). */
    String[] make(String name, String cn, String san) throws IOException, InterruptedException {
        String cert = dir.resolve(name + ".pem").toString();
        String key = dir.resolve(name + ".key").toString();
        List<String> cmd = new ArrayList<>(List.of("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + cn));
        if (san != null) cmd.addAll(List.of("-addext", "subjectAltName=" + san));
        run(cmd);
        return new String[] {cert, key};
    }

    /** {@code key} rewritten in OpenSSL's traditional EC form ({@code BEGIN EC PRIVATE KEY}). */
    String traditionalEc(String key) throws IOException, InterruptedException {
        String out = dir.resolve(new File(key).getName() + ".sec1").toString();
        run(List.of("openssl", "ec", "-in", key, "-out", out));
        return out;
    }

    private static void run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed: " + output);
        }
    }
}
