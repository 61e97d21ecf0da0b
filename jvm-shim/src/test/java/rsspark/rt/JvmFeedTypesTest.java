package rsspark.rt;

import static org.junit.jupiter.api.Assertions.*;

import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

import rsspark.rsocket.Metadata;

/**
 * format("reactive-rt") with a jvmPublisher (JvmFeed) carries TIMESTAMP_NTZ, TIMESTAMP, DATE and DECIMAL
 * into Spark's rows as Spark stores them (rsspark.fixtures.Typed), and refuses an ARRAY column when it opens.
 */
class JvmFeedTypesTest {
    static final long WAIT = TimeUnit.SECONDS.toNanos(30);
    static final StructType SCHEMA =
            StructType.fromDDL("id BIGINT, wall TIMESTAMP_NTZ, at TIMESTAMP, day DATE, amount DECIMAL(38,18)");

    static RtOptions options(String feed) {
        Map<String, String> m = RtOptionsTest.opts();
        m.put("jvmPublisher", feed);
        m.put("publisher.count", "4");
        return RtOptions.parse(m);
    }

    @Test
    void wallClocksInstantsDatesAndDecimalsReachSparksRowsAsSparkStoresThem() throws Exception {
        JvmFeed f = JvmFeed.open(options("rsspark.fixtures.Feeds#typed"), SCHEMA, Metadata.newKey(), "run", 0, 0);
        List<Object[]> rows = new ArrayList<>();
        try {
            while (rows.size() < 4) {
                Chunk c = f.poll(WAIT);
                assertNotNull(c, "no chunk within 30 s");
                for (InternalRow r : c.rows()) {
                    rows.add(new Object[] {r.getLong(0), r.isNullAt(1) ? null : r.getLong(1),
                        r.isNullAt(2) ? null : r.getLong(2), r.isNullAt(3) ? null : r.getInt(3),
                        r.isNullAt(4) ? null : r.getDecimal(4, 38, 18).toJavaBigDecimal()});
                }
            }
        } finally {
            f.cancel();
        }
        BigDecimal max = new BigDecimal("99999999999999999999.999999999999999999");
        LocalDateTime wall = LocalDateTime.of(2024, 3, 10, 2, 30, 0, 123_456_000);
        assertArrayEquals(new Object[] {0L, wall.toEpochSecond(ZoneOffset.UTC) * 1_000_000L + 123_456L,
            1_704_164_645_123_456L, -719_162, max}, rows.get(0));
        assertArrayEquals(new Object[] {1L, -62_135_596_800_000_000L, -1L, 2_932_896, max.negate()}, rows.get(1));
        assertEquals(0, new BigDecimal("1E-18").compareTo((BigDecimal) rows.get(2)[4]));
        assertArrayEquals(new Object[] {3L, null, null, null, null}, rows.get(3));
    }

    @Test
    void anArrayColumnIsRefusedWhenTheFeedOpensNamingWhatIsCarried() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> JvmFeed.open(
                options("rsspark.fixtures.Feeds#typed"), StructType.fromDDL("id BIGINT, tags ARRAY<STRING>"),
                Metadata.newKey(), "run", 0, 0));
        assertTrue(e.getMessage().contains("ARRAY<STRING>") && e.getMessage().contains("TIMESTAMP_NTZ, DATE"),
                e.getMessage());
    }
}
