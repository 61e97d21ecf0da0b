package rsspark.rt;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The table behind {@code format("reactive-rt")}: a streaming read only. */
final class RtTable implements SupportsRead {
    private final StructType schema;

    RtTable(StructType schema) {
        this.schema = schema;
    }

    @Override
    public String name() {
        return "reactive-rt";
    }

    @Override
    public Column[] columns() {
        StructField[] fs = schema.fields();
        Column[] out = new Column[fs.length];
        for (int i = 0; i < fs.length; i++) out[i] = Column.create(fs[i].name(), fs[i].dataType(), fs[i].nullable());
        return out;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.MICRO_BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        RtOptions o = RtOptions.parse(options.asCaseSensitiveMap()); // as given: errors name keys as the user wrote them
        return () -> new Scan() {
            @Override
            public StructType readSchema() {
                return schema;
            }

            @Override
            public String description() {
                return "reactive-rt[" + o.describe() + "]";
            }

            @Override
            public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
                return new RtStream(schema, o, checkpointLocation);
            }
        };
    }
}
