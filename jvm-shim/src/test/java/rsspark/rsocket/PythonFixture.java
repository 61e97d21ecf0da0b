package rsspark.rsocket;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * The Python rs_spark.net server of tests/realtime/fixture_server.py, in its own process: the Java
 * client is tested against the real Python server. Its stdout lines (events) are collected here;
 * closing its stdin ends it. The build passes {@code -Drsspark.python} and {@code -Drsspark.root}.
 */
public final class PythonFixture implements AutoCloseable {
    private final Process process;
    private final List<String> lines = new ArrayList<>();
    private final StringBuilder errors = new StringBuilder();

    public PythonFixture(String... args) throws IOException {
        String python = System.getProperty("rsspark.python", "python3");
        String root = System.getProperty("rsspark.root", new File("..").getAbsolutePath());
        List<String> cmd = new ArrayList<>(List.of(python, "-m", "tests.realtime.fixture_server"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(new File(root));
        pb.environment().put("PYTHONPATH", root);
        process = pb.start();
        Thread out = new Thread(() -> pump(new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)), false));
        Thread err = new Thread(() -> pump(new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8)), true));
        out.setDaemon(true);
        err.setDaemon(true);
        out.start();
        err.start();
    }

    private void pump(BufferedReader r, boolean stderr) {
        try {
            String line;
            while ((line = r.readLine()) != null) {
                synchronized (this) {
                    if (stderr) errors.append(line).append('\n');
                    else lines.add(line);
                    notifyAll();
                }
            }
        } catch (IOException e) {
            // the process ended
        }
    }

    /** The server's address (with its token). */
    public String address() throws InterruptedException {
        return await(l -> l.startsWith("ADDRESS "), "its address").substring("ADDRESS ".length());
    }

    /** Wait (up to 30 s) for a line matching {@code p}; fail naming {@code what} and the server's stderr. */
    public synchronized String await(Predicate<String> p, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            for (String l : lines) if (p.test(l)) return l;
            long left = deadline - System.currentTimeMillis();
            if (left <= 0 || !process.isAlive() && lines.stream().noneMatch(p)) {
                if (left > 0) wait(200); // let the pumps read the last lines of a process that ended
                for (String l : lines) if (p.test(l)) return l;
                throw new AssertionError("the Python fixture did not print " + what + "; its output: " + lines
                        + "; its stderr: " + errors);
            }
            wait(left);
        }
    }

    /** The last value of a counter line ({@code REQUESTED 12}), or 0. */
    public synchronized long last(String counter) {
        long v = 0;
        for (String l : lines) if (l.startsWith(counter + " ")) v = Long.parseLong(l.substring(counter.length() + 1));
        return v;
    }

    public synchronized List<String> lines() {
        return new ArrayList<>(lines);
    }

    @Override
    public void close() throws IOException {
        process.getOutputStream().close();
        try {
            if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) process.destroyForcibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
