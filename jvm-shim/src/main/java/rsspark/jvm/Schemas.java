package rsspark.jvm;

import java.beans.BeanInfo;
import java.beans.Introspector;
import java.beans.PropertyDescriptor;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Schemas as compact text, {@code "id:int64,name:string"}, shared with the Python side.
 *
 * <p>Types: {@code bool int8 int16 int32 int64 float32 float64 string binary timestamp
 * timestamp_ntz date decimal(p,s)}. timestamp: an instant, microseconds, UTC (Spark TIMESTAMP; from
 * {@link java.time.Instant}, {@link java.time.OffsetDateTime}, {@link java.time.ZonedDateTime});
 * timestamp_ntz: a wall clock, microseconds, no zone (Spark TIMESTAMP_NTZ; from
 * {@link java.time.LocalDateTime}); date: days since 1970-01-01 (Spark DATE, Arrow date32; from
 * {@link java.time.LocalDate}); decimal(p,s): Arrow decimal128 (Spark DECIMAL(p,s), 1 &lt;= p &lt;= 38,
 * 0 &lt;= s &lt;= p; from {@link java.math.BigDecimal}, BigInteger or an integer). A schema can also be
 * declared by a class: a boxed primitive, String, byte[] or one of the classes above gives one
 * column {@code value} (BigDecimal: decimal(38,18), BigInteger: decimal(38,0), as Spark's encoders declare them); a record its
 * components; a bean its readable properties. Maps need a given schema.
 */
public final class Schemas {
    public static final String VALUE = "value";

    private Schemas() {}

    public static Schema parse(String spec) {
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("empty schema: give it as \"name:type,...\", e.g. \"id:int64,name:string\"");
        }
        List<Field> fields = new ArrayList<>();
        for (String part : split(spec)) {
            String p = part.trim();
            int colon = p.lastIndexOf(':');
            if (colon <= 0 || colon == p.length() - 1) {
                throw new IllegalArgumentException("schema field '" + p + "' in \"" + spec
                        + "\" is not name:type (types: " + TYPES + ")");
            }
            fields.add(Field.nullable(p.substring(0, colon).trim(), type(p.substring(colon + 1).trim(), spec)));
        }
        return new Schema(fields);
    }

    static final String TYPES =
            "bool int8 int16 int32 int64 float32 float64 string binary timestamp timestamp_ntz date decimal(p,s)";

    /** {@code spec} split at the commas outside parentheses (decimal(10,2) holds one). */
    static List<String> split(String spec) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < spec.length(); i++) {
            char c = spec.charAt(i);
            if (c == '(') depth++;
            else if (c == ')') depth = Math.max(0, depth - 1);
            else if (c == ',' && depth == 0) {
                parts.add(spec.substring(start, i));
                start = i + 1;
            }
        }
        parts.add(spec.substring(start));
        return parts;
    }

    private static final java.util.regex.Pattern DECIMAL =
            java.util.regex.Pattern.compile("decimal\\s*\\(\\s*(\\d+)\\s*(?:,\\s*(\\d+)\\s*)?\\)");

    static ArrowType type(String name, String spec) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (lower.startsWith("decimal")) return decimal(lower, name, spec);
        switch (lower) {
            case "bool": case "boolean": return ArrowType.Bool.INSTANCE;
            case "int8": case "byte": return new ArrowType.Int(8, true);
            case "int16": case "short": return new ArrowType.Int(16, true);
            case "int32": case "int": case "integer": return new ArrowType.Int(32, true);
            case "int64": case "long": case "bigint": return new ArrowType.Int(64, true);
            case "float32": case "float": return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case "float64": case "double": return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            case "string": case "utf8": return ArrowType.Utf8.INSTANCE;
            case "binary": case "bytes": return ArrowType.Binary.INSTANCE;
            case "timestamp": return new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC");
            case "timestamp_ntz": return new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
            case "date": case "date32": return new ArrowType.Date(DateUnit.DAY);
            default:
                throw new IllegalArgumentException("unknown type '" + name + "' in schema \"" + spec + "\"; types: " + TYPES);
        }
    }

    private static ArrowType decimal(String lower, String name, String spec) {
        java.util.regex.Matcher m = DECIMAL.matcher(lower);
        if (!m.matches()) {
            throw new IllegalArgumentException("type '" + name + "' in schema \"" + spec
                    + "\" is no decimal(p,s): give precision p (1 to 38) and scale s (0 to p), e.g. decimal(10,2)");
        }
        int p;
        int s;
        try {
            p = Integer.parseInt(m.group(1));
            s = m.group(2) == null ? 0 : Integer.parseInt(m.group(2));
        } catch (NumberFormatException e) {
            p = -1;
            s = -1;
        }
        if (p < 1 || p > 38 || s < 0 || s > p) {
            throw new IllegalArgumentException("type '" + name + "' in schema \"" + spec
                    + "\": a decimal's precision is 1 to 38 and its scale 0 to the precision (Spark DECIMAL(p,s))");
        }
        return new ArrowType.Decimal(p, s, 128);
    }

    /** The spec text of a schema (inverse of {@link #parse}). */
    public static String format(Schema schema) {
        StringBuilder sb = new StringBuilder();
        for (Field f : schema.getFields()) {
            if (sb.length() > 0) sb.append(',');
            sb.append(f.getName()).append(':').append(typeName(f.getType()));
        }
        return sb.toString();
    }

    static String typeName(ArrowType t) {
        if (t instanceof ArrowType.Bool) return "bool";
        if (t instanceof ArrowType.Int) return "int" + ((ArrowType.Int) t).getBitWidth();
        if (t instanceof ArrowType.FloatingPoint) {
            return ((ArrowType.FloatingPoint) t).getPrecision() == FloatingPointPrecision.SINGLE ? "float32" : "float64";
        }
        if (t instanceof ArrowType.Utf8) return "string";
        if (t instanceof ArrowType.Binary) return "binary";
        if (t instanceof ArrowType.Timestamp) {
            return ((ArrowType.Timestamp) t).getTimezone() == null ? "timestamp_ntz" : "timestamp";
        }
        if (t instanceof ArrowType.Date && ((ArrowType.Date) t).getUnit() == DateUnit.DAY) return "date";
        if (t instanceof ArrowType.Decimal && ((ArrowType.Decimal) t).getBitWidth() == 128) {
            ArrowType.Decimal d = (ArrowType.Decimal) t;
            return "decimal(" + d.getPrecision() + "," + d.getScale() + ")";
        }
        throw new IllegalArgumentException("unsupported Arrow type " + t);
    }

    /** The scalar type name of a boxed primitive / String / byte[] / java.time / BigDecimal class, or null. */
    static String scalarType(Class<?> c) {
        if (c == Long.class || c == long.class) return "int64";
        if (c == Integer.class || c == int.class) return "int32";
        if (c == Short.class || c == short.class) return "int16";
        if (c == Byte.class || c == byte.class) return "int8";
        if (c == Double.class || c == double.class) return "float64";
        if (c == Float.class || c == float.class) return "float32";
        if (c == Boolean.class || c == boolean.class) return "bool";
        if (c == String.class || c == Character.class || c == char.class) return "string";
        if (c == byte[].class) return "binary";
        if (c == java.time.Instant.class || c == java.time.OffsetDateTime.class
                || c == java.time.ZonedDateTime.class) return "timestamp";
        if (c == java.time.LocalDateTime.class) return "timestamp_ntz";
        if (c == java.time.LocalDate.class) return "date";
        if (c == java.math.BigDecimal.class) return "decimal(38,18)"; // Spark's DecimalType.SYSTEM_DEFAULT
        if (c == java.math.BigInteger.class) return "decimal(38,0)"; // Spark's DecimalType.BigIntDecimal
        return null;
    }

    /** The schema a class declares (see the class comment). */
    public static Schema of(Class<?> c) {
        String scalar = scalarType(c);
        if (scalar != null) return parse(VALUE + ":" + scalar);
        if (Map.class.isAssignableFrom(c)) {
            throw new IllegalArgumentException("elements are Maps (" + c.getName()
                    + "): a Map declares no schema, so give one, e.g. \"id:int64,name:string\"");
        }
        StringBuilder sb = new StringBuilder();
        if (c.isRecord()) {
            for (RecordComponent rc : c.getRecordComponents()) {
                append(sb, c, rc.getName(), rc.getType());
            }
        } else {
            for (PropertyDescriptor pd : beanProperties(c)) {
                append(sb, c, pd.getName(), pd.getPropertyType());
            }
        }
        if (sb.length() == 0) {
            throw new IllegalArgumentException("cannot declare a schema from " + c.getName()
                    + ": it is no boxed primitive, String, byte[], Instant, LocalDateTime, LocalDate, BigDecimal, record or bean with getters; give a schema");
        }
        return parse(sb.toString());
    }

    private static void append(StringBuilder sb, Class<?> owner, String name, Class<?> type) {
        String t = scalarType(type);
        if (t == null) {
            throw new IllegalArgumentException(owner.getName() + "." + name + " has type " + type.getName()
                    + ", which has no Arrow column type here (" + TYPES + "); give a schema without it");
        }
        if (sb.length() > 0) sb.append(',');
        sb.append(name).append(':').append(t);
    }

    static List<PropertyDescriptor> beanProperties(Class<?> c) {
        try {
            BeanInfo info = Introspector.getBeanInfo(c, Object.class);
            List<PropertyDescriptor> out = new ArrayList<>();
            for (PropertyDescriptor pd : info.getPropertyDescriptors()) {
                if (pd.getReadMethod() != null) out.add(pd);
            }
            return out;
        } catch (java.beans.IntrospectionException e) {
            throw new IllegalArgumentException("cannot introspect bean " + c.getName() + ": " + e, e);
        }
    }
}
