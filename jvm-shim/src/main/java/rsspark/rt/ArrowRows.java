package rsspark.rt;

import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import rsspark.rsocket.ArrowPayloads;
import rsspark.rsocket.ProtocolException;
import rsspark.rsocket.StreamReader;

/**
 * Arrow payloads -> Spark rows of the query's schema: each payload is decoded and validated
 * ({@link ArrowPayloads#decode}), its schema checked against the declared one (same column names
 * and Spark types, in order), and its rows copied out as {@code UnsafeRow}s, so nothing refers to
 * the Arrow buffers once they are freed. One instance per stream: not thread-safe.
 */
final class ArrowRows implements StreamReader.PayloadDecoder<Chunk> {
    private final StructType schema;
    private final BufferAllocator allocator;
    private final String what;
    private UnsafeProjection toUnsafe;
    private org.apache.arrow.vector.types.pojo.Schema checked; // the last Arrow schema found to match

    ArrowRows(StructType schema, BufferAllocator allocator, String what) {
        this.schema = schema;
        this.allocator = allocator;
        this.what = what;
    }

    @Override
    public Chunk decode(byte[] buf, int off, int len) throws ProtocolException {
        try (VectorSchemaRoot root = ArrowPayloads.decode(buf, off, len, allocator, what)) {
            check(root.getSchema());
            return new Chunk(rows(root));
        }
    }

    @Override
    public int rows(Chunk item) {
        return item.size();
    }

    private List<InternalRow> rows(VectorSchemaRoot root) {
        int n = root.getRowCount();
        List<FieldVector> vs = root.getFieldVectors();
        ColumnVector[] cols = new ColumnVector[vs.size()];
        for (int i = 0; i < cols.length; i++) cols[i] = new ArrowColumnVector(vs.get(i));
        if (toUnsafe == null) toUnsafe = UnsafeProjection.create(schema);
        List<InternalRow> out = new ArrayList<>(n);
        ColumnarBatch batch = new ColumnarBatch(cols, n);
        for (int i = 0; i < n; i++) out.add(toUnsafe.apply(batch.getRow(i)).copy());
        return out; // not batch.close(): the vectors belong to root, closed by the caller
    }

    private void check(org.apache.arrow.vector.types.pojo.Schema got) throws ProtocolException {
        if (got.equals(checked)) return;
        List<Field> fields = got.getFields();
        StructField[] want = schema.fields();
        if (fields.size() != want.length) {
            throw new ProtocolException(what + " sent rows with " + fields.size() + " columns " + names(fields)
                    + "; the query's schema has " + want.length + " (" + schema.toDDL() + "): give the schema the "
                    + "publisher sends, or publish that schema");
        }
        for (int i = 0; i < want.length; i++) {
            Field f = fields.get(i);
            DataType t;
            try {
                t = ArrowUtils.fromArrowField(f);
            } catch (RuntimeException e) {
                throw new ProtocolException(what + " sent column '" + f.getName() + "' of Arrow type " + f.getType()
                        + ", which Spark cannot read: " + e.getMessage());
            }
            if (!f.getName().equals(want[i].name()) || !t.simpleString().equals(want[i].dataType().simpleString())) {
                throw new ProtocolException(what + " sent column " + i + " as '" + f.getName() + "' " + t.simpleString()
                        + ", but the query's schema has '" + want[i].name() + "' " + want[i].dataType().simpleString()
                        + " there (schema " + schema.toDDL() + "): give the schema the publisher sends");
            }
        }
        checked = got;
    }

    private static List<String> names(List<Field> fields) {
        List<String> out = new ArrayList<>();
        for (Field f : fields) out.add(f.getName());
        return out;
    }
}
