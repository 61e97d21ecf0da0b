package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Nested payloads through {@link ArrowPayloads#decode}: a MAP column is valid (Arrow Java 19's own type
 * check refused every map vector), a map with a null key is refused, and a decimal inside a list is
 * checked as a top-level one (up to p digits valid, more refused).
 */
class NestedPayloadsTest {
    private static final BufferAllocator ALLOC = new RootAllocator();

    @AfterAll
    static void nothingLeaks() {
        assertEquals(0, ALLOC.getAllocatedMemory());
    }

    /** MAP<STRING, BIGINT> "tags": {a: 1, b: null}, {}, null; with {@code nullKey} the first key is null. */
    private static byte[] tags(boolean nullKey) {
        Field key = new Field("key", FieldType.notNullable(new ArrowType.Utf8()), null);
        Field value = new Field("value", FieldType.nullable(new ArrowType.Int(64, true)), null);
        Field entries = new Field("entries", FieldType.notNullable(new ArrowType.Struct()), List.of(key, value));
        Field map = new Field("tags", FieldType.nullable(new ArrowType.Map(false)), List.of(entries));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(List.of(map)), ALLOC)) {
            MapVector m = (MapVector) root.getVector(0);
            m.allocateNew();
            StructVector st = (StructVector) m.getDataVector();
            VarCharVector k = (VarCharVector) st.getChild("key");
            BigIntVector v = (BigIntVector) st.getChild("value");
            int e = m.startNewValue(0);
            if (nullKey) k.setNull(e);
            else k.setSafe(e, "a".getBytes(StandardCharsets.UTF_8));
            v.setSafe(e, 1);
            st.setIndexDefined(e);
            k.setSafe(e + 1, "b".getBytes(StandardCharsets.UTF_8));
            v.setNull(e + 1);
            st.setIndexDefined(e + 1);
            m.endValue(0, 2);
            m.startNewValue(1);
            m.endValue(1, 0);
            m.setNull(2);
            k.setValueCount(2);
            v.setValueCount(2);
            st.setValueCount(2);
            m.setValueCount(3);
            root.setRowCount(3);
            return ArrowPayloads.encode(root);
        }
    }

    /** ARRAY<DECIMAL(4,2)> "amounts": one list of these unscaled values, written raw. */
    private static byte[] amounts(long... unscaled) {
        Field item = Field.nullable("item", new ArrowType.Decimal(4, 2, 128));
        Field list = new Field("amounts", FieldType.nullable(new ArrowType.List()), List.of(item));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(List.of(list)), ALLOC)) {
            ListVector l = (ListVector) root.getVector(0);
            l.allocateNew();
            DecimalVector d = (DecimalVector) l.getDataVector();
            int e = l.startNewValue(0);
            for (int i = 0; i < unscaled.length; i++) d.setSafe(e + i, unscaled[i]);
            l.endValue(0, unscaled.length);
            d.setValueCount(unscaled.length);
            l.setValueCount(1);
            root.setRowCount(1);
            return ArrowPayloads.encode(root);
        }
    }

    @Test
    void aMapColumnIsValidAndReadsBackAsWritten() throws Exception {
        byte[] b = tags(false);
        try (VectorSchemaRoot r = ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer")) {
            MapVector m = (MapVector) r.getVector(0);
            assertEquals(3, r.getRowCount());
            assertEquals("[{\"key\":\"a\",\"value\":1},{\"key\":\"b\"}]", m.getObject(0).toString());
            assertEquals(0, m.getObject(1).size());
            assertTrue(m.isNull(2));
        }
    }

    @Test
    void aMapWithANullKeyIsRefusedNamingTheColumn() {
        byte[] b = tags(true);
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer").close());
        assertTrue(e.getMessage().contains("map column 'tags' has a null key"), e.getMessage());
        assertTrue(e.getMessage().startsWith("malformed Arrow payload from peer"), e.getMessage());
    }

    @Test
    void aDecimalInsideAListMayHaveExactlyPrecisionDigits() throws Exception {
        byte[] b = amounts(9999, -9999, 1);
        try (VectorSchemaRoot r = ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer")) {
            DecimalVector d = (DecimalVector) ((ListVector) r.getVector(0)).getDataVector();
            assertEquals(new BigDecimal("99.99"), d.getObject(0));
        }
    }

    @Test
    void aDecimalInsideAListWithMoreDigitsThanThePrecisionIsRefused() {
        byte[] b = amounts(1, 12345);
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer").close());
        assertTrue(e.getMessage().contains("value at position 1 has 5 digits, more than its precision 4"),
                e.getMessage());
    }
}
