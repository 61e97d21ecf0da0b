package rsspark.rsocket;

import java.math.BigDecimal;

import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.validate.ValidateVectorBufferVisitor;
import org.apache.arrow.vector.validate.ValidateVectorDataVisitor;
import org.apache.arrow.vector.validate.ValidateVectorTypeVisitor;

/**
 * Arrow's full validation of a loaded vector and everything nested in it (types, buffers and
 * layout, then data: offsets, UTF-8, decimal digits), as {@code ValueVectorUtility.validateFull}
 * does, with two of Arrow Java 19's checks mended where they refuse what Spark and pyarrow write:
 *
 * <ul>
 *   <li>a map: {@code MapVector} is a {@code ListVector}, and the type check of a list wants
 *       {@code ArrowType.List}, so every map vector failed ("Incorrect arrow type for class
 *       MapVector"). Here a map must have {@code ArrowType.Map}; its entries are checked as Arrow
 *       checks a list's elements.</li>
 *   <li>a decimal: Arrow's check ({@code DecimalUtility.checkPrecisionAndScaleNoThrow}) wants fewer
 *       digits than the precision, so it refused every value with exactly p digits (99.99 in
 *       DECIMAL(4,2)). Here a value may have up to p digits, never more, at any depth.</li>
 * </ul>
 *
 * <p>And one check Arrow leaves out: a map's keys are never null (Spark's maps cannot hold one).
 */
final class ArrowValidation {
    private ArrowValidation() {}

    /** Throws an {@code IllegalArgumentException} (Arrow's ValidateException) naming what is wrong. */
    static void validateFull(FieldVector v) {
        v.accept(new Types(), null);
        v.accept(new ValidateVectorBufferVisitor(), null);
        v.accept(new Data(), null);
    }

    /** Arrow's type check, a map's own type included. */
    private static final class Types extends ValidateVectorTypeVisitor {
        @Override
        public Void visit(ListVector vector, Void value) {
            if (!(vector instanceof MapVector)) return super.visit(vector, value);
            if (!(vector.getField().getType() instanceof ArrowType.Map)) {
                throw new IllegalArgumentException("map column '" + vector.getName() + "' has Arrow type "
                        + vector.getField().getType() + ", not a map");
            }
            FieldVector entries = vector.getDataVector();
            if (entries != null) entries.accept(this, null);
            return null;
        }
    }

    /** Arrow's data check, a decimal's digits counted as Spark counts them, and a map's keys never null. */
    private static final class Data extends ValidateVectorDataVisitor {
        @Override
        public Void visit(ListVector vector, Void value) {
            super.visit(vector, value);
            if (vector instanceof MapVector && vector.getDataVector() instanceof StructVector) {
                StructVector entries = (StructVector) vector.getDataVector();
                java.util.List<FieldVector> kv = entries.getChildrenFromFields();
                FieldVector keys = kv.isEmpty() ? null : kv.get(0);
                if (keys == null || keys.getNullCount() > 0) {
                    throw new IllegalArgumentException("map column '" + vector.getName() + "' has "
                            + (keys == null ? "no keys" : "a null key") + " (a map's keys are never null)");
                }
            }
            return null;
        }

        @Override
        public Void visit(BaseFixedWidthVector vector, Void value) {
            if (!(vector instanceof DecimalVector)) return super.visit(vector, value);
            DecimalVector d = (DecimalVector) vector;
            for (int i = 0; i < d.getValueCount(); i++) {
                if (d.isNull(i)) continue;
                BigDecimal x = d.getObject(i);
                if (x.precision() > d.getPrecision()) {
                    throw new IllegalArgumentException("decimal column '" + d.getName() + "' value at position " + i
                            + " has " + x.precision() + " digits, more than its precision " + d.getPrecision());
                }
            }
            return null;
        }
    }
}
