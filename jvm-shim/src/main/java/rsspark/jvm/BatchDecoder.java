package rsspark.jvm;

import java.beans.PropertyDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.RecordComponent;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.util.Text;

/**
 * Arrow IPC stream bytes -> JVM elements.
 *
 * <p>Element kinds: {@code value} (the first column's values, boxed: Long, String, byte[], Instant
 * (timestamp), LocalDateTime (timestamp_ntz), LocalDate (date), BigDecimal (decimal), ...),
 * {@code map} (a {@code LinkedHashMap} by column name), {@code list} (column values by position),
 * {@code auto} ({@code value} for one column, else {@code map}), or the name of a record class (canonical constructor, by component name) or bean class
 * (no-argument constructor and setters).
 */
public final class BatchDecoder {
    private final BufferAllocator allocator;
    private final String kind;
    private final Class<?> target;
    private Constructor<?> ctor;
    private String[] componentNames;
    private Class<?>[] componentTypes;
    private Map<String, Method> setters;

    public BatchDecoder(String kind, BufferAllocator allocator) {
        this.allocator = allocator;
        this.kind = kind == null || kind.isEmpty() ? "value" : kind;
        if (this.kind.equals("value") || this.kind.equals("map") || this.kind.equals("list") || this.kind.equals("auto")) {
            this.target = null;
        } else {
            this.target = load(this.kind);
            prepare();
        }
    }

    static Class<?> load(String name) {
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        try {
            return Class.forName(name, true, cl != null ? cl : BatchDecoder.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e2) {
                throw new IllegalArgumentException("element kind '" + name + "' is neither value, map, list "
                        + "nor a class on the classpath (add its jar, e.g. with spark.jars)", e2);
            }
        }
    }

    private void prepare() {
        if (target.isRecord()) {
            RecordComponent[] rcs = target.getRecordComponents();
            componentNames = new String[rcs.length];
            componentTypes = new Class<?>[rcs.length];
            for (int i = 0; i < rcs.length; i++) {
                componentNames[i] = rcs[i].getName();
                componentTypes[i] = rcs[i].getType();
            }
            try {
                ctor = target.getDeclaredConstructor(componentTypes);
                ctor.setAccessible(true);
            } catch (NoSuchMethodException e) {
                throw new IllegalArgumentException("record " + target.getName() + " has no canonical constructor", e);
            }
        } else {
            try {
                ctor = target.getDeclaredConstructor();
                ctor.setAccessible(true);
            } catch (NoSuchMethodException e) {
                throw new IllegalArgumentException(target.getName() + " is no record and has no no-argument "
                        + "constructor, so it cannot be built as a bean", e);
            }
            setters = new HashMap<>();
            for (PropertyDescriptor pd : java.util.Arrays.asList(beanDescriptors(target))) {
                if (pd.getWriteMethod() != null) setters.put(pd.getName(), pd.getWriteMethod());
            }
        }
    }

    private static PropertyDescriptor[] beanDescriptors(Class<?> c) {
        try {
            return java.beans.Introspector.getBeanInfo(c, Object.class).getPropertyDescriptors();
        } catch (java.beans.IntrospectionException e) {
            throw new IllegalArgumentException("cannot introspect bean " + c.getName(), e);
        }
    }

    /** Decode every batch of the stream, appending elements to {@code out}; returns the row count. */
    public int decode(byte[] ipc, List<Object> out) {
        int rows = 0;
        try (ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(ipc), allocator)) {
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            while (reader.loadNextBatch()) {
                int n = root.getRowCount();
                List<FieldVector> vs = root.getFieldVectors();
                for (int i = 0; i < n; i++) out.add(element(vs, i));
                rows += n;
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("not an Arrow IPC stream: " + e, e);
        }
        return rows;
    }

    private Object element(List<FieldVector> vs, int row) {
        String k = kind;
        if (k.equals("auto")) k = vs.size() == 1 ? "value" : "map";
        switch (k) {
            case "value":
                return value(vs.get(0), row);
            case "map": {
                Map<String, Object> m = new LinkedHashMap<>();
                for (FieldVector v : vs) m.put(v.getName(), value(v, row));
                return m;
            }
            case "list": {
                List<Object> l = new ArrayList<>(vs.size());
                for (FieldVector v : vs) l.add(value(v, row));
                return l;
            }
            default:
                return target.isRecord() ? record(vs, row) : bean(vs, row);
        }
    }

    private Object record(List<FieldVector> vs, int row) {
        Object[] args = new Object[componentNames.length];
        for (int i = 0; i < args.length; i++) {
            FieldVector v = find(vs, componentNames[i]);
            Object x = v == null ? null : value(v, row);
            args[i] = coerce(x, componentTypes[i], componentNames[i]);
        }
        try {
            return ctor.newInstance(args);
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("building " + target.getName() + " failed: " + e.getCause(), e);
        }
    }

    private Object bean(List<FieldVector> vs, int row) {
        try {
            Object b = ctor.newInstance();
            for (FieldVector v : vs) {
                Method set = setters.get(v.getName());
                if (set != null) set.invoke(b, coerce(value(v, row), set.getParameterTypes()[0], v.getName()));
            }
            return b;
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("building bean " + target.getName() + " failed: " + e, e);
        }
    }

    private static FieldVector find(List<FieldVector> vs, String name) {
        for (FieldVector v : vs) if (v.getName().equals(name)) return v;
        return null;
    }

    static Object value(FieldVector v, int row) {
        if (v.isNull(row)) return null;
        if (v instanceof VarCharVector) return new String(((VarCharVector) v).get(row), java.nio.charset.StandardCharsets.UTF_8);
        if (v instanceof TimeStampVector) {
            long micros = ((TimeStampVector) v).get(row);
            long seconds = Math.floorDiv(micros, 1_000_000L);
            int nanos = (int) Math.floorMod(micros, 1_000_000L) * 1000;
            if (((ArrowType.Timestamp) v.getField().getType()).getTimezone() == null) {
                return LocalDateTime.ofEpochSecond(seconds, nanos, ZoneOffset.UTC); // a wall clock (TIMESTAMP_NTZ)
            }
            return Instant.ofEpochSecond(seconds, nanos);
        }
        if (v instanceof DateDayVector) return LocalDate.ofEpochDay(((DateDayVector) v).get(row));
        Object o = v.getObject(row);
        return o instanceof Text ? o.toString() : o;
    }

    static Object coerce(Object x, Class<?> t, String name) {
        if (x == null) {
            if (t.isPrimitive()) throw new IllegalArgumentException("column '" + name + "' is null but the target is " + t);
            return null;
        }
        if (x instanceof Number) {
            Number n = (Number) x;
            if (t == long.class || t == Long.class) return n.longValue();
            if (t == int.class || t == Integer.class) return n.intValue();
            if (t == short.class || t == Short.class) return n.shortValue();
            if (t == byte.class || t == Byte.class) return n.byteValue();
            if (t == double.class || t == Double.class) return n.doubleValue();
            if (t == float.class || t == Float.class) return n.floatValue();
        }
        return x;
    }
}
