package rsspark.rsocket;

import static org.junit.jupiter.api.Assertions.*;

import java.math.BigDecimal;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A decimal payload's values are validated with up to p digits (Arrow 19's own check refuses exactly
 * p digits: 99.99 in DECIMAL(4,2), DECIMAL(38,18)'s extremes), and more than p digits is refused.
 */
class DecimalPayloadsTest {
    private static final BufferAllocator ALLOC = new RootAllocator();

    @AfterAll
    static void nothingLeaks() {
        assertEquals(0, ALLOC.getAllocatedMemory());
    }

    /** A DECIMAL(p,s) column of these unscaled values, written raw (no precision check on this side). */
    private static byte[] decimals(int p, int s, long... unscaled) {
        Schema schema = new Schema(List.of(Field.nullable("amount", new ArrowType.Decimal(p, s, 128))));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, ALLOC)) {
            DecimalVector v = (DecimalVector) root.getVector(0);
            v.allocateNew(unscaled.length + 1);
            for (int i = 0; i < unscaled.length; i++) v.setSafe(i, unscaled[i]);
            v.setNull(unscaled.length);
            root.setRowCount(unscaled.length + 1);
            return ArrowPayloads.encode(root);
        }
    }

    @Test
    void valuesWithExactlyPrecisionDigitsAreValid() throws Exception {
        byte[] b = decimals(4, 2, 9999, -9999, 1, 0);
        try (VectorSchemaRoot r = ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer")) {
            DecimalVector v = (DecimalVector) r.getVector(0);
            assertEquals(new BigDecimal("99.99"), v.getObject(0));
            assertEquals(new BigDecimal("-99.99"), v.getObject(1));
            assertTrue(v.isNull(4));
        }
        Schema schema = new Schema(List.of(Field.nullable("amount", new ArrowType.Decimal(38, 18, 128))));
        BigDecimal max = new BigDecimal("99999999999999999999.999999999999999999");
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, ALLOC)) {
            DecimalVector v = (DecimalVector) root.getVector(0);
            v.allocateNew(2);
            v.setSafe(0, max);
            v.setSafe(1, max.negate());
            root.setRowCount(2);
            byte[] big = ArrowPayloads.encode(root);
            try (VectorSchemaRoot r = ArrowPayloads.decode(big, 0, big.length, ALLOC, "peer")) {
                assertEquals(max, ((DecimalVector) r.getVector(0)).getObject(0));
            }
        }
    }

    @Test
    void aValueWithMoreDigitsThanThePrecisionIsRefused() {
        byte[] b = decimals(4, 2, 1, 12345);
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ArrowPayloads.decode(b, 0, b.length, ALLOC, "peer").close());
        assertTrue(e.getMessage().contains("decimal column 'amount' value at position 1 has 5 digits, more than its "
                + "precision 4"), e.getMessage());
    }
}
