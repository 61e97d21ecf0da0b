package rsspark.jvm;

import java.beans.PropertyDescriptor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.RecordComponent;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Elements -> one Arrow IPC stream (schema + one record batch) in a byte[].
 *
 * <p>Elements: a scalar (boxed primitive, String, byte[], Instant, LocalDateTime, LocalDate,
 * BigDecimal; see {@link Schemas}) for a one-column schema; a
 * {@code Map} (by field name); a record (by component name); a bean (by getter); a {@code List}
 * or {@code Object[]} (by position). Not thread-safe: one encoder per bridge.
 */
public final class BatchEncoder implements AutoCloseable {
    private final Schema schema;
    private final VectorSchemaRoot root;
    private final Writer[] writers;
    private final String[] names;
    private final Map<Class<?>, Function<Object, Object>[]> extractors = new IdentityHashMap<>();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream(1 << 16);

    /** Thrown for an element that does not fit the schema; {@code index} is its position in the call. */
    public static final class EncodeException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final int index;

        EncodeException(int index, String message, Throwable cause) {
            super(message, cause);
            this.index = index;
        }
    }

    public BatchEncoder(Schema schema, BufferAllocator allocator) {
        this.schema = schema;
        this.root = VectorSchemaRoot.create(schema, allocator);
        List<Field> fields = schema.getFields();
        this.writers = new Writer[fields.size()];
        this.names = new String[fields.size()];
        for (int i = 0; i < writers.length; i++) {
            names[i] = fields.get(i).getName();
            writers[i] = writer(root.getVector(i));
        }
    }

    public Schema schema() {
        return schema;
    }

    /**
     * Encode {@code elements[from, to)}; on a bad element, encode the ones before it and throw
     * {@link EncodeException} with its index (the caller decides what the prefix is worth).
     */
    public byte[] encode(List<?> elements, int from, int to, long firstOffset) {
        int n = to - from;
        for (FieldVector v : root.getFieldVectors()) {
            v.setInitialCapacity(n);
            v.allocateNew();
        }
        int row = 0;
        EncodeException failure = null;
        for (int k = from; k < to; k++, row++) {
            Object e = elements.get(k);
            try {
                Function<Object, Object>[] ex = extractorsFor(e);
                for (int f = 0; f < writers.length; f++) {
                    Object value = ex == null ? e : ex[f].apply(e);
                    try {
                        if (value == null) {
                            root.getVector(f).setNull(row);
                        } else {
                            writers[f].write(row, value);
                        }
                    } catch (RuntimeException bad) {
                        throw new EncodeException(k, "element at offset " + (firstOffset + (k - from))
                                + " does not fit the schema: field '" + names[f] + "' ("
                                + Schemas.typeName(schema.getFields().get(f).getType()) + ") got "
                                + value.getClass().getName() + " " + shortString(value) + ": " + bad, bad);
                    }
                }
            } catch (EncodeException ee) {
                failure = ee;
                break;
            } catch (RuntimeException bad) {
                failure = new EncodeException(k, "element at offset " + (firstOffset + (k - from))
                        + " cannot be encoded with schema \"" + Schemas.format(schema) + "\": " + bad, bad);
                break;
            }
        }
        byte[] bytes = row > 0 || failure == null ? write(row) : null;
        if (failure != null) {
            pending = bytes;
            throw failure;
        }
        return bytes;
    }

    private byte[] pending;

    /** The rows encoded before the element that failed the last {@link #encode} call (or null). */
    public byte[] takeEncodedPrefix() {
        byte[] b = pending;
        pending = null;
        return b;
    }

    private byte[] write(int rows) {
        root.setRowCount(rows);
        out.reset();
        try {
            writeRoot(Channels.newChannel(out));
        } catch (IOException e) {
            throw new IllegalStateException("writing an Arrow IPC stream to memory failed", e);
        }
        return out.toByteArray();
    }

    private void writeRoot(WritableByteChannel ch) throws IOException {
        ArrowStreamWriter w = new ArrowStreamWriter(root, null, ch);
        w.start();
        w.writeBatch();
        w.end();
        // not w.close(): it would close the caller's channel; the writer holds no other resource
    }

    /** True when this encoder can take a {@code long[]} directly: one non-null int64 column. */
    public boolean takesLongs() {
        return writers.length == 1 && root.getVector(0) instanceof BigIntVector;
    }

    /**
     * The primitive fast path: {@code values[0, n)} as one int64 column, written as an Arrow IPC
     * stream into {@code ch} (no boxing, no intermediate byte[]). Only when {@link #takesLongs}.
     */
    public void encodeLongs(long[] values, int n, WritableByteChannel ch) throws IOException {
        fillLongs(values, n);
        writeRoot(ch);
    }

    /** As {@link #encodeLongs(long[], int, WritableByteChannel)}, into a byte[]. */
    public byte[] encodeLongs(long[] values, int n) {
        fillLongs(values, n);
        return write(n);
    }

    private void fillLongs(long[] values, int n) {
        BigIntVector v = (BigIntVector) root.getVector(0);
        v.setInitialCapacity(n);
        v.allocateNew(n);
        ArrowBuf data = v.getDataBuffer();
        for (int i = 0; i < n; i++) data.setLong((long) i * 8L, values[i]);
        // elements are never null (rule 2.13): every validity bit is 1
        ArrowBuf valid = v.getValidityBuffer();
        int full = n >>> 3;
        valid.setOne(0L, full); // setOne(int, int) is deprecated
        if ((n & 7) != 0) valid.setByte(full, (1 << (n & 7)) - 1);
        v.setValueCount(n);
        root.setRowCount(n);
    }

    /** Encode {@code elements[from, to)} into {@code ch}; failures as {@link #encode}, the prefix written. */
    public void encode(List<?> elements, int from, int to, long firstOffset, WritableByteChannel ch) throws IOException {
        try {
            ch.write(java.nio.ByteBuffer.wrap(encode(elements, from, to, firstOffset)));
        } catch (EncodeException e) {
            byte[] prefix = takeEncodedPrefix();
            if (prefix != null) ch.write(java.nio.ByteBuffer.wrap(prefix));
            throw e;
        }
    }

    static String shortString(Object v) {
        String s = v instanceof byte[] ? ("byte[" + ((byte[]) v).length + "]") : String.valueOf(v);
        return s.length() > 120 ? s.substring(0, 120) + "..." : s;
    }

    // Java has no generic array creation (new Function<Object, Object>[n]): the raw array is
    // unchecked, and every slot is filled with a Function<Object, Object> below.
    @SuppressWarnings({"unchecked", "rawtypes"})
    private Function<Object, Object>[] extractorsFor(Object e) {
        if (e == null) throw new NullPointerException("null element (rule 2.13)");
        Class<?> c = e.getClass();
        if (writers.length == 1 && Schemas.scalarType(c) != null) return null;
        Function<Object, Object>[] ex = extractors.get(c);
        if (ex != null) return ex;
        ex = new Function[writers.length];
        if (e instanceof Map) {
            for (int f = 0; f < ex.length; f++) {
                String name = names[f];
                ex[f] = m -> ((Map<?, ?>) m).get(name);
            }
        } else if (e instanceof List) {
            for (int f = 0; f < ex.length; f++) {
                int pos = f;
                ex[f] = l -> ((List<?>) l).get(pos);
            }
        } else if (e instanceof Object[]) {
            for (int f = 0; f < ex.length; f++) {
                int pos = f;
                ex[f] = a -> ((Object[]) a)[pos];
            }
        } else {
            Map<String, Method> getters = new HashMap<>();
            if (c.isRecord()) {
                for (RecordComponent rc : c.getRecordComponents()) getters.put(rc.getName(), rc.getAccessor());
            } else {
                for (PropertyDescriptor pd : Schemas.beanProperties(c)) getters.put(pd.getName(), pd.getReadMethod());
            }
            for (int f = 0; f < ex.length; f++) {
                Method m = getters.get(names[f]);
                if (m == null) {
                    if (writers.length == 1 && getters.isEmpty()) {
                        throw new IllegalArgumentException(c.getName() + " is no scalar, Map, List, record or bean");
                    }
                    throw new IllegalArgumentException(c.getName() + " has no " + (c.isRecord() ? "component" : "bean property")
                            + " '" + names[f] + "' (it has " + getters.keySet() + ")");
                }
                m.setAccessible(true);
                ex[f] = o -> {
                    try {
                        return m.invoke(o);
                    } catch (ReflectiveOperationException r) {
                        throw new IllegalStateException("calling " + m + " failed: " + r, r);
                    }
                };
            }
        }
        extractors.put(c, ex);
        return ex;
    }

    interface Writer {
        void write(int row, Object value);
    }

    static Writer writer(org.apache.arrow.vector.ValueVector v) {
        if (v instanceof BigIntVector) { BigIntVector x = (BigIntVector) v; return (i, o) -> x.setSafe(i, exactInteger(o, 64)); }
        if (v instanceof IntVector) { IntVector x = (IntVector) v; return (i, o) -> x.setSafe(i, (int) exactInteger(o, 32)); }
        if (v instanceof SmallIntVector) { SmallIntVector x = (SmallIntVector) v; return (i, o) -> x.setSafe(i, (short) exactInteger(o, 16)); }
        if (v instanceof TinyIntVector) { TinyIntVector x = (TinyIntVector) v; return (i, o) -> x.setSafe(i, (byte) exactInteger(o, 8)); }
        if (v instanceof Float8Vector) { Float8Vector x = (Float8Vector) v; return (i, o) -> x.setSafe(i, ((Number) o).doubleValue()); }
        if (v instanceof Float4Vector) { Float4Vector x = (Float4Vector) v; return (i, o) -> x.setSafe(i, ((Number) o).floatValue()); }
        if (v instanceof BitVector) { BitVector x = (BitVector) v; return (i, o) -> x.setSafe(i, ((Boolean) o) ? 1 : 0); }
        if (v instanceof VarCharVector) {
            VarCharVector x = (VarCharVector) v;
            return (i, o) -> x.setSafe(i, (o instanceof CharSequence || o instanceof Character)
                    ? o.toString().getBytes(StandardCharsets.UTF_8) : BatchEncoder.<byte[]>failType(o, "a String"));
        }
        if (v instanceof VarBinaryVector) { VarBinaryVector x = (VarBinaryVector) v; return (i, o) -> x.setSafe(i, (byte[]) o); }
        if (v instanceof TimeStampMicroTZVector) {
            TimeStampMicroTZVector x = (TimeStampMicroTZVector) v;
            return (i, o) -> x.setSafe(i, micros(instant(o)));
        }
        if (v instanceof TimeStampMicroVector) { // no zone: a wall clock (Spark TIMESTAMP_NTZ)
            TimeStampMicroVector x = (TimeStampMicroVector) v;
            return (i, o) -> x.setSafe(i, micros(wallClock(o).toInstant(ZoneOffset.UTC)));
        }
        if (v instanceof DateDayVector) {
            DateDayVector x = (DateDayVector) v;
            return (i, o) -> {
                if (!(o instanceof LocalDate)) failType(o, "a java.time.LocalDate (the field is date, Spark DATE)");
                x.setSafe(i, Math.toIntExact(((LocalDate) o).toEpochDay()));
            };
        }
        if (v instanceof DecimalVector) {
            DecimalVector x = (DecimalVector) v;
            int precision = x.getPrecision();
            int scale = x.getScale();
            return (i, o) -> x.setSafe(i, exactDecimal(o, precision, scale));
        }
        throw new IllegalArgumentException("no writer for " + v.getField());
    }

    /**
     * {@code o} as an integer of {@code bits} bits, or an error: never narrowed (a Long beyond an int32
     * column's range is refused, not wrapped) nor truncated (a Double is refused, as pyspark refuses a
     * float for an integer column). Takes Long, Integer, Short, Byte and BigInteger.
     */
    static long exactInteger(Object o, int bits) {
        long min = bits == 64 ? Long.MIN_VALUE : -(1L << (bits - 1));
        long max = bits == 64 ? Long.MAX_VALUE : (1L << (bits - 1)) - 1;
        boolean fits;
        long x = 0;
        if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
            x = ((Number) o).longValue();
            fits = x >= min && x <= max;
        } else if (o instanceof BigInteger) {
            fits = ((BigInteger) o).bitLength() < bits; // bitLength excludes the sign bit
            if (fits) x = ((BigInteger) o).longValue();
        } else {
            return BatchEncoder.<Long>failType(o, "an integer: Long, Integer, Short, Byte or BigInteger (the field is int"
                    + bits + "; a fraction is never truncated)");
        }
        if (!fits) {
            throw new IllegalArgumentException(o + " is outside the range of the field's int" + bits + " (" + min + " to "
                    + max + "): declare a wider integer type (int64, or decimal(38,0))");
        }
        return x;
    }

    /**
     * Microseconds since the epoch, the sub-microsecond digits dropped (towards the past), as Spark
     * stores an Instant or LocalDateTime.
     */
    static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
    }

    /** An instant for a timestamp (zoned) field: Instant, OffsetDateTime or ZonedDateTime; never a wall clock. */
    static Instant instant(Object o) {
        if (o instanceof Instant) return (Instant) o;
        if (o instanceof OffsetDateTime) return ((OffsetDateTime) o).toInstant();
        if (o instanceof ZonedDateTime) return ((ZonedDateTime) o).toInstant();
        if (o instanceof LocalDateTime) {
            throw new IllegalArgumentException("a LocalDateTime is a wall clock without a zone, and the field is "
                    + "timestamp (an instant, Spark TIMESTAMP): give an Instant (or OffsetDateTime, ZonedDateTime: "
                    + "e.g. localDateTime.atZone(zone).toInstant()), or declare the field timestamp_ntz (Spark TIMESTAMP_NTZ)");
        }
        return failType(o, "an Instant, OffsetDateTime or ZonedDateTime (the field is timestamp, Spark TIMESTAMP)");
    }

    /** A wall clock for a timestamp_ntz field: a LocalDateTime; never an instant (whose wall clock depends on a zone). */
    static LocalDateTime wallClock(Object o) {
        if (o instanceof LocalDateTime) return (LocalDateTime) o;
        if (o instanceof Instant || o instanceof OffsetDateTime || o instanceof ZonedDateTime) {
            throw new IllegalArgumentException("a " + o.getClass().getSimpleName() + " is an instant, and the field is "
                    + "timestamp_ntz (a wall clock without a zone, Spark TIMESTAMP_NTZ): give a LocalDateTime "
                    + "(e.g. LocalDateTime.ofInstant(instant, zone)), or declare the field timestamp (Spark TIMESTAMP)");
        }
        return failType(o, "a java.time.LocalDateTime (the field is timestamp_ntz, Spark TIMESTAMP_NTZ)");
    }

    /**
     * {@code o} as a BigDecimal of exactly {@code scale}, or an error: never rounded (a value with
     * more fraction digits than the scale, other than trailing zeros, is refused), never more than
     * {@code precision} digits. Takes BigDecimal, BigInteger, Long, Integer, Short, Byte (no float or
     * double: their binary fractions are not the decimals they print as).
     */
    static BigDecimal exactDecimal(Object o, int precision, int scale) {
        BigDecimal d;
        if (o instanceof BigDecimal) d = (BigDecimal) o;
        else if (o instanceof BigInteger) d = new BigDecimal((BigInteger) o);
        else if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
            d = BigDecimal.valueOf(((Number) o).longValue());
        } else {
            return failType(o, "a java.math.BigDecimal, BigInteger or integer (the field is decimal(" + precision
                    + "," + scale + "), Spark DECIMAL(" + precision + "," + scale + "))");
        }
        BigDecimal exact;
        try {
            exact = d.setScale(scale, RoundingMode.UNNECESSARY);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(d.toPlainString() + " has more than " + scale + " digits after the "
                    + "point, and the field is decimal(" + precision + "," + scale + "): round it to the scale "
                    + "(value.setScale(" + scale + ", RoundingMode.HALF_EVEN)) or declare a larger scale", e);
        }
        if (exact.precision() > precision) {
            throw new IllegalArgumentException(d.toPlainString() + " has " + (exact.precision() - scale)
                    + " digits before the point, and the field is decimal(" + precision + "," + scale + "), which holds "
                    + (precision - scale) + ": declare a larger precision (at most 38)");
        }
        return exact;
    }

    private static <T> T failType(Object o, String what) {
        throw new ClassCastException(o.getClass().getName() + " is not " + what);
    }

    @Override
    public void close() {
        root.close();
    }
}
