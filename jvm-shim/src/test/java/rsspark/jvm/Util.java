package rsspark.jvm;

import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

final class Util {
    private Util() {}

    /** The first column's values of an IPC stream. */
    static List<Object> column(byte[] ipc) throws Exception {
        List<Object> out = new ArrayList<>();
        try (RootAllocator a = new RootAllocator();
             ArrowStreamReader r = new ArrowStreamReader(new ByteArrayInputStream(ipc), a)) {
            VectorSchemaRoot root = r.getVectorSchemaRoot();
            while (r.loadNextBatch()) {
                FieldVector v = root.getVector(0);
                for (int i = 0; i < root.getRowCount(); i++) out.add(BatchDecoder.value(v, i));
            }
        }
        return out;
    }

    static byte[] encode(String schema, List<?> items) {
        try (BatchEncoder e = new BatchEncoder(Schemas.parse(schema), new RootAllocator())) {
            return e.encode(items, 0, items.size(), 0);
        }
    }
}
