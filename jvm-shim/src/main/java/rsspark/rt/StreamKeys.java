package rsspark.rt;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import rsspark.rsocket.Metadata;

/**
 * The key of a query's stream, kept in the query's checkpoint (the source's metadata folder), so a
 * query restarted before its first batch was committed resumes the same stream rather than
 * subscribing anew (Kafka's source keeps its initial offsets there the same way).
 */
final class StreamKeys {
    private StreamKeys() {}

    static final String FILE = "reactive-rt-stream";

    /** The key stored under {@code metadataPath}, or a new one stored there now. */
    static String keyFor(String metadataPath, Configuration conf) {
        Path p = new Path(metadataPath, FILE);
        try {
            FileSystem fs = p.getFileSystem(conf);
            if (fs.exists(p)) return read(fs, p);
            String key = Metadata.newKey();
            try (OutputStream out = fs.create(p, false)) {
                out.write(key.getBytes(StandardCharsets.US_ASCII));
            } catch (FileAlreadyExistsException e) {
                return read(fs, p); // another attempt wrote it first: use that one
            }
            return key;
        } catch (IOException e) {
            throw new UncheckedIOException("format('reactive-rt') cannot keep its stream key in the checkpoint ("
                    + p + "): " + e.getMessage() + "; check that checkpointLocation is writable", e);
        }
    }

    private static String read(FileSystem fs, Path p) throws IOException {
        byte[] b;
        try (InputStream in = fs.open(p)) {
            b = in.readNBytes(64);
        }
        String key = new String(b, StandardCharsets.US_ASCII).trim();
        try {
            return Metadata.checkKey(key);
        } catch (IllegalArgumentException e) {
            throw new IOException(p + " holds '" + key + "', not a stream key: it was not written by rs_spark; "
                    + "restore it or start the query from a new checkpointLocation", e);
        }
    }
}
