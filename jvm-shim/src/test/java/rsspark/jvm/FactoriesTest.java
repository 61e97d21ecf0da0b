package rsspark.jvm;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Map;
import java.util.concurrent.Flow;

import org.junit.jupiter.api.Test;

/** Factories.publisher: a factory's ordinary exception is reported as "raised"; a fatal error is not wrapped. */
class FactoriesTest {

    public static Flow.Publisher<Object> overflowing() {
        throw new StackOverflowError("the factory recursed");
    }

    public static Flow.Publisher<Object> failing() {
        throw new IllegalStateException("no feed configured");
    }

    /** A Publisher whose constructor runs out of memory. */
    public static final class Hungry implements Flow.Publisher<Object> {
        public Hungry() {
            throw new OutOfMemoryError("no heap left");
        }

        @Override
        public void subscribe(Flow.Subscriber<? super Object> s) {}
    }

    @Test
    void aFatalErrorFromAFactoryMethodIsRethrownNotWrapped() {
        StackOverflowError e = assertThrows(StackOverflowError.class,
                () -> Factories.publisher(FactoriesTest.class.getName() + "#overflowing", Map.of()));
        assertEquals("the factory recursed", e.getMessage());
    }

    @Test
    void aFatalErrorFromAPublishersConstructorIsRethrownNotWrapped() {
        OutOfMemoryError e = assertThrows(OutOfMemoryError.class,
                () -> Factories.publisher(Hungry.class.getName(), null));
        assertEquals("no heap left", e.getMessage());
    }

    @Test
    void anOrdinaryExceptionFromAFactoryIsReportedAsRaisedWithItsCause() {
        Factories.FactoryException e = assertThrows(Factories.FactoryException.class,
                () -> Factories.publisher(FactoriesTest.class.getName() + "#failing", Map.of()));
        assertEquals("raised", e.kind);
        assertInstanceOf(IllegalStateException.class, e.getCause());
        assertTrue(e.getMessage().contains("no feed configured"), e.getMessage());
    }
}
