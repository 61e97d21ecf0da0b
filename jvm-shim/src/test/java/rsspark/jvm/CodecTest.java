package rsspark.jvm;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

class CodecTest {
    record Point(long x, String label) {}

    public static class Bean {
        private int size;
        private String name;
        public Bean() {}
        Bean(int size, String name) { this.size = size; this.name = name; }
        public int getSize() { return size; }
        public void setSize(int s) { size = s; }
        public String getName() { return name; }
        public void setName(String n) { name = n; }
    }

    private static List<Object> roundTrip(String schema, List<?> items, String kind) {
        byte[] ipc = Util.encode(schema, items);
        List<Object> out = new ArrayList<>();
        new BatchDecoder(kind, new RootAllocator()).decode(ipc, out);
        return out;
    }

    @Test
    void schemasParseFormatAndDeclareFromClasses() {
        assertEquals("id:int64,name:string", Schemas.format(Schemas.parse("id:long, name:utf8")));
        assertEquals("value:int64", Schemas.format(Schemas.of(Long.class)));
        assertEquals("value:binary", Schemas.format(Schemas.of(byte[].class)));
        assertEquals("x:int64,label:string", Schemas.format(Schemas.of(Point.class)));
        assertEquals("name:string,size:int32", Schemas.format(Schemas.of(Bean.class)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Schemas.parse("id:interval"));
        assertTrue(e.getMessage().contains("unknown type 'interval'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Schemas.of(LinkedHashMap.class));
    }

    @Test
    void boxedPrimitivesStringsBytesAndInstantsRoundTrip() {
        assertEquals(List.of(1L, -2L, Long.MAX_VALUE), roundTrip("value:int64", List.of(1L, -2L, Long.MAX_VALUE), "value"));
        assertEquals(List.of("a", "é", ""), roundTrip("value:string", List.of("a", "é", ""), "value"));
        assertEquals(List.of(1.5, 2.0), roundTrip("value:float64", List.of(1.5, 2.0), "value"));
        assertEquals(List.of(true, false), roundTrip("value:bool", List.of(true, false), "value"));
        List<Object> bytes = roundTrip("value:binary", List.of("xy".getBytes(StandardCharsets.UTF_8)), "value");
        assertArrayEquals("xy".getBytes(StandardCharsets.UTF_8), (byte[]) bytes.get(0));
        Instant t = Instant.parse("2024-01-02T03:04:05.123456Z");
        assertEquals(List.of(t), roundTrip("value:timestamp", List.of(t), "value"));
    }

    @Test
    void mapsRecordsBeansAndListsRoundTrip() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("x", 7L);
        m.put("label", null);
        List<Object> maps = roundTrip("x:int64,label:string", List.of(m), "map");
        assertEquals(m, maps.get(0));
        List<Object> recs = roundTrip("x:int64,label:string", List.of(new Point(3, "p")), Point.class.getName());
        assertEquals(new Point(3, "p"), recs.get(0));
        List<Object> beans = roundTrip("size:int32,name:string", List.of(new Bean(4, "b")), Bean.class.getName());
        assertEquals(4, ((Bean) beans.get(0)).getSize());
        assertEquals("b", ((Bean) beans.get(0)).getName());
        List<Object> lists = roundTrip("x:int64,label:string", List.<Object>of(Arrays.asList(1L, "one")), "list");
        assertEquals(Arrays.asList(1L, "one"), lists.get(0));
    }

    @Test
    void integersAreNeverNarrowedNorTruncated() throws Exception {
        assertEquals(List.of(-128, 127, 5), Util.column(Util.encode("value:int8",
                List.of((byte) -128, 127L, java.math.BigInteger.valueOf(5)))).stream().map(o -> ((Number) o).intValue()).toList());
        assertEquals(List.of(Long.MIN_VALUE, Long.MAX_VALUE), Util.column(Util.encode("value:int64",
                List.of(java.math.BigInteger.valueOf(Long.MIN_VALUE), Long.MAX_VALUE))));
        for (Object[] c : new Object[][] {
                {"n:int32", 2_147_483_648L, "outside the range of the field's int32 (-2147483648 to 2147483647)"},
                {"n:int8", 128, "outside the range of the field's int8"},
                {"n:int16", -32_769, "outside the range of the field's int16"},
                {"n:int64", java.math.BigInteger.ONE.shiftLeft(63), "outside the range of the field's int64"},
                {"n:int64", 1.5, "java.lang.Double is not an integer"},
        }) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("n", c[1]);
            BatchEncoder.EncodeException e = assertThrows(BatchEncoder.EncodeException.class,
                    () -> Util.encode((String) c[0], List.of(m)));
            assertTrue(e.getMessage().contains("field 'n'") && e.getMessage().contains((String) c[2]), e.getMessage());
        }
    }

    @Test
    void aBadElementNamesItsOffsetAndFieldAndKeepsThePrefix() {
        try (BatchEncoder e = new BatchEncoder(Schemas.parse("value:int64"), new RootAllocator())) {
            List<Object> items = List.of(1L, 2L, "three");
            BatchEncoder.EncodeException ex = assertThrows(BatchEncoder.EncodeException.class,
                    () -> e.encode(items, 0, 3, 100));
            assertEquals(2, ex.index);
            assertTrue(ex.getMessage().contains("offset 102") && ex.getMessage().contains("'value'"), ex.getMessage());
            byte[] prefix = e.takeEncodedPrefix();
            assertNotNull(prefix);
        }
    }
}
