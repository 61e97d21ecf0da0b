package rsspark.jvm;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Flow;

/**
 * A JVM Publisher named by text, for options such as the reader's {@code jvmPublisher}:
 * {@code "com.example.Feeds#quotes"} (a public static method taking no argument or a
 * {@code Map<String, String>} of options) or {@code "com.example.QuotePublisher"} (a public
 * class that is a Publisher, built with its no-argument or {@code Map} constructor).
 *
 * <p>Failures throw {@link FactoryException}, whose {@code kind} tells the caller which advice
 * fits: {@code class} (not on the classpath), {@code method} (no such method or constructor),
 * {@code type} (the result is not a Publisher), {@code raised} (the factory threw).
 */
public final class Factories {
    private Factories() {}

    public static final class FactoryException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final String kind;

        FactoryException(String kind, String message, Throwable cause) {
            super("[" + kind + "] " + message, cause);
            this.kind = kind;
        }
    }

    /** The Publisher {@code spec} names, given {@code options} (may be null: an empty map). */
    public static Object publisher(String spec, Map<String, String> options) {
        if (spec == null || spec.isBlank()) throw new FactoryException("method", "the name is empty", null);
        Map<String, String> opts = options == null ? Map.of() : options;
        String s = spec.trim();
        int hash = s.indexOf('#');
        String className = hash < 0 ? s : s.substring(0, hash).trim();
        String methodName = hash < 0 ? null : s.substring(hash + 1).trim();
        Class<?> c = load(className);
        Object p = methodName == null ? construct(c, opts) : invoke(c, methodName, opts);
        if (p == null) {
            throw new FactoryException("type", describe(c, methodName) + " returned null, not a Publisher", null);
        }
        if (!(p instanceof Flow.Publisher) && !(Interop.reactiveStreamsAvailable() && RsAdapters.isPublisher(p))) {
            throw new FactoryException("type", describe(c, methodName) + " returned " + p.getClass().getName()
                    + ", which is neither a java.util.concurrent.Flow.Publisher nor an org.reactivestreams.Publisher"
                    + (Interop.reactiveStreamsAvailable() ? "" : " (org.reactivestreams is not on the classpath)"),
                    null);
        }
        return p;
    }

    private static Class<?> load(String name) {
        ClassLoader l = Thread.currentThread().getContextClassLoader();
        try {
            return Class.forName(name, true, l != null ? l : Factories.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new FactoryException("class", "class " + name + " is not on the JVM's classpath", null);
        } catch (LinkageError e) { // the class the user named does not link (or its initializer threw): bad input
            throw new FactoryException("class", "class " + name + " cannot be loaded: " + e, e);
        }
    }

    private static String describe(Class<?> c, String method) {
        return method == null ? "new " + c.getName() + "()" : c.getName() + "." + method + "()";
    }

    private static Object invoke(Class<?> c, String name, Map<String, String> opts) {
        Method noArg = null, withMap = null;
        for (Method m : c.getMethods()) {
            if (!m.getName().equals(name) || !Modifier.isStatic(m.getModifiers())) continue;
            Class<?>[] ps = m.getParameterTypes();
            if (ps.length == 0) noArg = m;
            else if (ps.length == 1 && ps[0].isAssignableFrom(Map.class)) withMap = m;
        }
        Method m = withMap != null ? withMap : noArg;
        if (m == null) {
            TreeSet<String> statics = new TreeSet<>();
            for (Method x : c.getMethods()) {
                if (Modifier.isStatic(x.getModifiers()) && x.getParameterCount() <= 1
                        && x.getDeclaringClass() != Object.class) {
                    statics.add(x.getName() + "(" + String.join(", ", names(x.getParameterTypes())) + ")");
                }
            }
            throw new FactoryException("method", "class " + c.getName() + " has no public static method " + name
                    + "() or " + name + "(Map<String, String>)"
                    + (statics.isEmpty() ? "" : "; its public static methods: " + String.join(", ", statics)), null);
        }
        try {
            return m.getParameterCount() == 0 ? m.invoke(null) : m.invoke(null, opts);
        } catch (InvocationTargetException e) {
            Throwable t = e.getCause();
            Fatal.throwIfFatal(t); // the factory's own error: a fatal one goes on as it is, never wrapped
            throw new FactoryException("raised", describe(c, name) + " threw " + t, t);
        } catch (IllegalAccessException e) {
            throw new FactoryException("method", describe(c, name) + " is not accessible: " + e.getMessage(), e);
        }
    }

    private static Object construct(Class<?> c, Map<String, String> opts) {
        if (!Flow.Publisher.class.isAssignableFrom(c)
                && !(Interop.reactiveStreamsAvailable() && isRsPublisherClass(c))) {
            throw new FactoryException("type", "class " + c.getName() + " is not a Publisher (neither "
                    + "java.util.concurrent.Flow.Publisher nor org.reactivestreams.Publisher); name a factory method "
                    + "as " + c.getName() + "#method", null);
        }
        Constructor<?> noArg = null, withMap = null;
        for (Constructor<?> k : c.getConstructors()) {
            Class<?>[] ps = k.getParameterTypes();
            if (ps.length == 0) noArg = k;
            else if (ps.length == 1 && ps[0].isAssignableFrom(Map.class)) withMap = k;
        }
        Constructor<?> k = withMap != null ? withMap : noArg;
        if (k == null || Modifier.isAbstract(c.getModifiers())) {
            throw new FactoryException("method", "class " + c.getName() + " has no public constructor taking no "
                    + "argument or a Map<String, String>" + (Modifier.isAbstract(c.getModifiers()) ? " (it is abstract)" : "")
                    + "; name a factory method as " + c.getName() + "#method", null);
        }
        try {
            return k.getParameterCount() == 0 ? k.newInstance() : k.newInstance(opts);
        } catch (InvocationTargetException e) {
            Throwable t = e.getCause();
            Fatal.throwIfFatal(t); // the constructor's own error: a fatal one goes on as it is, never wrapped
            throw new FactoryException("raised", describe(c, null) + " threw " + t, t);
        } catch (ReflectiveOperationException e) {
            throw new FactoryException("method", describe(c, null) + " failed: " + e, e);
        }
    }

    private static boolean isRsPublisherClass(Class<?> c) {
        try {
            return Class.forName("org.reactivestreams.Publisher", false, c.getClassLoader() != null
                    ? c.getClassLoader() : Factories.class.getClassLoader()).isAssignableFrom(c);
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static List<String> names(Class<?>[] types) {
        List<String> out = new ArrayList<>();
        for (Class<?> t : types) out.add(t.getSimpleName());
        return out;
    }
}
