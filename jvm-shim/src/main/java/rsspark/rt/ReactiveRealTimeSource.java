package rsspark.rt;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.readStream.format("reactive-rt")}: a Reactive Streams Publisher (served by
 * rs_spark.net, or a JVM Publisher named by {@code jvmPublisher}) read by a JVM DataSource V2 source
 * that takes part in Spark's real-time mode ({@code trigger(realTime=...)}) and in micro-batches.
 *
 * <p>Its name is not {@code reactive}: Spark resolves a name that both a JVM source and a Python
 * data source register to the JVM one, which would hide the Python {@code reactive} source
 * whenever this jar is on the classpath.
 */
public final class ReactiveRealTimeSource implements TableProvider, DataSourceRegister {
    public static final String NAME = "reactive-rt";

    @Override
    public String shortName() {
        return NAME;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        String ddl = options.get("schema");
        if (ddl == null || ddl.isBlank()) {
            throw new IllegalArgumentException("format('reactive-rt') needs a schema: .schema(\"id LONG, t DOUBLE\") or "
                    + "option schema (DDL); it must match the Arrow columns the publisher sends");
        }
        try {
            return StructType.fromDDL(ddl);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("format('reactive-rt'): option schema='" + ddl + "' is not a DDL schema ("
                    + e.getMessage() + "); write it like \"id LONG, name STRING\"", e);
        }
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new RtTable(schema);
    }
}
