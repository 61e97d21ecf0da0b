package rsspark.jvm;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.junit.jupiter.api.Test;

/** timestamp_ntz (LocalDateTime), date (LocalDate) and decimal(p,s) (BigDecimal): encoder, decoder, schema text. */
class TemporalAndDecimalCodecTest {
    /** What the encoder wrote: the first column's Arrow type and its raw values (Long micros, Integer days, BigDecimal). */
    private record Column(ArrowType type, List<Object> raw) {}

    private static Column raw(byte[] ipc) throws Exception {
        List<Object> out = new ArrayList<>();
        try (RootAllocator a = new RootAllocator();
             ArrowStreamReader r = new ArrowStreamReader(new ByteArrayInputStream(ipc), a)) {
            VectorSchemaRoot root = r.getVectorSchemaRoot();
            ArrowType type = root.getSchema().getFields().get(0).getType();
            while (r.loadNextBatch()) {
                FieldVector v = root.getVector(0);
                for (int i = 0; i < root.getRowCount(); i++) {
                    if (v.isNull(i)) out.add(null);
                    else if (v instanceof TimeStampMicroVector) out.add(((TimeStampMicroVector) v).get(i));
                    else if (v instanceof DateDayVector) out.add(((DateDayVector) v).get(i));
                    else if (v instanceof DecimalVector) out.add(((DecimalVector) v).getObject(i));
                    else out.add(v.getObject(i));
                }
            }
            return new Column(type, out);
        }
    }

    private static Map<String, Object> row(String name, Object value) {
        Map<String, Object> m = new HashMap<>();
        m.put(name, value);
        return m;
    }

    private static BatchEncoder.EncodeException refused(String schema, List<?> items) {
        return assertThrows(BatchEncoder.EncodeException.class, () -> Util.encode(schema, items));
    }

    @Test
    void schemaTextCarriesTheNewTypesBothWays() {
        String spec = "ts:timestamp,wall:timestamp_ntz,day:date,amount:decimal(38,18),cents:decimal(10,2),n:decimal(5)";
        assertEquals("ts:timestamp,wall:timestamp_ntz,day:date,amount:decimal(38,18),cents:decimal(10,2),n:decimal(5,0)",
                Schemas.format(Schemas.parse(spec)));
        assertEquals(new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, null),
                Schemas.parse("x:timestamp_ntz").getFields().get(0).getType());
        assertEquals(new ArrowType.Decimal(38, 18, 128), Schemas.parse("x:DECIMAL( 38 , 18 )").getFields().get(0).getType());
        assertEquals("value:timestamp_ntz", Schemas.format(Schemas.of(LocalDateTime.class)));
        assertEquals("value:date", Schemas.format(Schemas.of(LocalDate.class)));
        assertEquals("value:decimal(38,18)", Schemas.format(Schemas.of(BigDecimal.class)));
        assertEquals("value:timestamp", Schemas.format(Schemas.of(OffsetDateTime.class)));
        for (String bad : List.of("x:decimal", "x:decimal(39,0)", "x:decimal(0,0)", "x:decimal(5,6)", "x:decimal(a,b)")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Schemas.parse(bad), bad);
            assertTrue(e.getMessage().contains("decimal"), e.getMessage());
        }
    }

    @Test
    void localDateTimesAreWallClocksToTheMicrosecond() throws Exception {
        LocalDateTime micro = LocalDateTime.of(2024, 3, 10, 2, 30, 0, 123_456_000); // a New York DST gap: no zone here
        LocalDateTime first = LocalDateTime.of(1, 1, 1, 0, 0);
        LocalDateTime last = LocalDateTime.of(9999, 12, 31, 23, 59, 59, 999_999_000);
        LocalDateTime beforeEpoch = LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_000);
        List<LocalDateTime> values = List.of(micro, first, last, beforeEpoch);
        Column c = raw(Util.encode("value:timestamp_ntz", values));
        assertNull(((ArrowType.Timestamp) c.type()).getTimezone());
        List<Object> want = new ArrayList<>();
        for (LocalDateTime t : values) {
            want.add(t.toEpochSecond(ZoneOffset.UTC) * 1_000_000L + t.getNano() / 1000);
        }
        assertEquals(want, c.raw());
        assertEquals(-1L, c.raw().get(3));
        assertEquals(values, Util.column(Util.encode("value:timestamp_ntz", values))); // decoded: LocalDateTime again
        // sub-microsecond digits are dropped towards the past, as Spark stores them
        LocalDateTime nanos = LocalDateTime.of(2024, 1, 2, 3, 4, 5, 123_456_789);
        assertEquals(List.of(nanos.withNano(123_456_000)), Util.column(Util.encode("value:timestamp_ntz", List.of(nanos))));
        Column nulls = raw(Util.encode("value:timestamp_ntz", List.of(row("value", null), row("value", micro))));
        assertEquals(Arrays.asList(null, want.get(0)), nulls.raw());
    }

    @Test
    void aWallClockAndAnInstantAreNeverTakenForEachOther() throws Exception {
        Instant instant = Instant.parse("2024-01-02T03:04:05.123456Z");
        BatchEncoder.EncodeException e = refused("wall:timestamp_ntz", List.of(row("wall", instant)));
        assertTrue(e.getMessage().contains("field 'wall' (timestamp_ntz)"), e.getMessage());
        assertTrue(e.getMessage().contains("give a LocalDateTime"), e.getMessage());
        e = refused("ts:timestamp", List.of(row("ts", LocalDateTime.of(2024, 1, 2, 3, 4))));
        assertTrue(e.getMessage().contains("field 'ts' (timestamp)"), e.getMessage());
        assertTrue(e.getMessage().contains("declare the field timestamp_ntz"), e.getMessage());
        // an OffsetDateTime or ZonedDateTime names one instant: taken for a timestamp field
        OffsetDateTime odt = OffsetDateTime.of(2024, 1, 2, 5, 4, 5, 123_456_000, ZoneOffset.ofHours(2));
        assertEquals(List.of(instant, instant), Util.column(Util.encode("value:timestamp",
                List.of(odt, odt.atZoneSameInstant(ZoneId.of("America/New_York"))))));
    }

    @Test
    void localDatesFromYearOneToYear9999() throws Exception {
        List<LocalDate> values = List.of(LocalDate.of(1, 1, 1), LocalDate.of(9999, 12, 31), LocalDate.of(1970, 1, 1),
                LocalDate.of(1969, 12, 31), LocalDate.of(2024, 2, 29));
        Column c = raw(Util.encode("value:date", values));
        assertEquals(new ArrowType.Date(org.apache.arrow.vector.types.DateUnit.DAY), c.type());
        assertEquals(List.of(-719_162, 2_932_896, 0, -1, 19_782), c.raw());
        assertEquals(values, Util.column(Util.encode("value:date", values)));
        assertEquals(Arrays.asList((Object) null), raw(Util.encode("value:date", List.of(row("value", null)))).raw());
        BatchEncoder.EncodeException e = refused("day:date", List.of(row("day", LocalDateTime.of(2024, 1, 2, 0, 0))));
        assertTrue(e.getMessage().contains("field 'day' (date)") && e.getMessage().contains("LocalDate"), e.getMessage());
    }

    @Test
    void decimalsAreExactAtTheirScaleOrRefused() throws Exception {
        BigDecimal max = new BigDecimal("99999999999999999999.999999999999999999");
        BigDecimal min = max.negate();
        BigDecimal tiny = new BigDecimal("0.000000000000000001");
        List<Object> values = List.of(max, min, tiny, new BigDecimal("1.5"), new BigDecimal("2.500000000000000000000"),
                BigInteger.TEN, 7L, 0);
        Column c = raw(Util.encode("value:decimal(38,18)", values));
        assertEquals(new ArrowType.Decimal(38, 18, 128), c.type());
        List<Object> want = new ArrayList<>();
        for (String s : List.of(max.toPlainString(), min.toPlainString(), tiny.toPlainString(), "1.5", "2.5", "10", "7", "0")) {
            want.add(new BigDecimal(s).setScale(18));
        }
        assertEquals(want, c.raw());
        assertEquals(Arrays.asList(null, new BigDecimal("-0.01")),
                raw(Util.encode("value:decimal(3,2)", List.of(row("value", null), row("value", new BigDecimal("-0.01"))))).raw());

        // more fraction digits than the scale: refused, never rounded
        BatchEncoder.EncodeException e = refused("amount:decimal(38,18)",
                List.of(new BigDecimal("1"), row("amount", new BigDecimal("1.0000000000000000001"))));
        assertTrue(e.getMessage().contains("element at offset 1"), e.getMessage());
        assertTrue(e.getMessage().contains("field 'amount' (decimal(38,18))"), e.getMessage());
        assertTrue(e.getMessage().contains("more than 18 digits after the point"), e.getMessage());
        // more integer digits than precision - scale
        e = refused("amount:decimal(38,18)", List.of(row("amount", max.add(tiny))));
        assertTrue(e.getMessage().contains("21 digits before the point") && e.getMessage().contains("holds 20"),
                e.getMessage());
        e = refused("cents:decimal(4,2)", List.of(row("cents", 100L)));
        assertTrue(e.getMessage().contains("3 digits before the point"), e.getMessage());
        // a double is not the decimal it prints as
        e = refused("cents:decimal(10,2)", List.of(row("cents", 0.1)));
        assertTrue(e.getMessage().contains("java.lang.Double") && e.getMessage().contains("BigDecimal"), e.getMessage());
    }
}
